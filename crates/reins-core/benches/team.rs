//! Benchmark: team mode on a shared PostgreSQL 15 (a throwaway cluster from Debian's binaries,
//! started by `reins-testpg` on 127.0.0.1; `synchronous_commit = on`).
//!
//! 1. The durable step on PostgreSQL: a script run of N `fs.write` steps, each with its two
//!    commits (intent; confirm + checkpoint + audit). Baseline on the same server, right after: per
//!    step, two plain commits carrying the very bytes Reins committed in that step's two
//!    transactions (read back from what it stored, into columns compressed as Reins' are), around
//!    the same atomic file write. Also the WAL each wrote per step: what its commits had to flush.
//! 2. Claims per second: 8 workers (each its own connection pool and identity, as 8 machines would
//!    be) race over R queued one-step runs; baseline, one worker over as many. Every run must
//!    finish once.
//! 3. Approval to wake-up: a worker waits with a 1 s poll; another "machine" approves the run's
//!    write; the time until the worker has claimed the run again. LISTEN/NOTIFY against the same
//!    worker polling only.
//!
//! `cargo bench -p reins-core --bench team [-- STEPS RUNS APPROVALS]` (defaults 200, 200, 9).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reins_core::api::{
    Action, ApprovalStatus, ApproveRequest, DataDir, Decision, Observer, Options, Plan, Policy,
    PolicyContext, Progress, Reins, Risk, RunId, Scope, Silent, Verdict,
};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

#[path = "support/steps.rs"]
mod steps;
use steps::{atomic_write, content, Stopwatch};

#[path = "support/permit_all.rs"]
mod permit_all;
use permit_all::PermitAll;

/// Asks a person about every write: the approval-to-wake-up part.
struct AskWrites;

impl Policy for AskWrites {
    fn classify(&self, action: &Action, _cx: &PolicyContext<'_>) -> Verdict {
        let write = action.tool() == "fs.write";
        Verdict {
            risk: if write { Risk::High } else { Risk::Low },
            decision: if write {
                Decision::Ask
            } else {
                Decision::Allow
            },
            reasons: vec![format!("{}: bench policy", action.tool())],
            segments: Vec::new(),
        }
    }

    fn version(&self) -> String {
        "ask-writes/1".into()
    }
}

/// When the worker claimed a run (an attempt began).
struct Claims(Mutex<Vec<Instant>>);

impl Observer for Claims {
    fn on(&self, p: &Progress) {
        if matches!(p, Progress::Attempt { .. }) {
            self.0.lock().unwrap().push(Instant::now());
        }
    }
}

fn plan(steps: usize, offset: usize) -> Plan {
    let steps: Vec<serde_json::Value> = (0..steps)
        .map(|i| {
            serde_json::json!({
                "tool": "fs.write",
                "args": { "path": format!("conf/{}.conf", offset + i), "content": content(i) },
                "why": "benchmark",
            })
        })
        .collect();
    let text = serde_json::json!({ "name": "bench", "goal": "measure", "steps": steps });
    Plan::from_json(&text.to_string()).unwrap()
}

fn options(url: &str, policy: Arc<dyn Policy>, listen: bool) -> Options {
    Options {
        lease_ms: 30_000,
        policy: Some(policy),
        database: Some(url.to_owned()),
        connections: 2,
        listen,
        ..Options::default()
    }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn pg(url: &str) -> sqlx::PgPool {
    let options: PgConnectOptions = url.parse().unwrap();
    PgPoolOptions::new()
        .max_connections(2)
        .after_connect(|conn, _| {
            Box::pin(async move {
                sqlx::Executor::execute(&mut *conn, "SET synchronous_commit = on").await?;
                Ok(())
            })
        })
        .connect_with(options)
        .await
        .unwrap()
}

/// The bytes Reins committed in each of a step's two transactions (see `durable_step`), read back
/// from what it stored: the first carries the step, its intent, its pre-images and their audit
/// events; the second the results, the checkpoint and theirs. The baseline commits these very
/// bytes, so it compresses what Reins compressed.
async fn committed_bytes(url: &str, run: RunId) -> Vec<(Vec<u8>, Vec<u8>)> {
    let pool = pg(url).await;
    let events = |kinds: &str, extra: &str| {
        format!(
            "COALESCE((SELECT string_agg(convert_to(a.kind || a.payload || a.prev_hash || a.hash, 'UTF8'), ''::bytea)
                       FROM audit_events a WHERE a.run_id = s.run_id AND a.kind IN {kinds} {extra}), ''::bytea)"
        )
    };
    let sql = format!(
        "SELECT convert_to(s.action || COALESCE(s.preview, '') || COALESCE(s.why, '') || s.action_hash
                           || i.id || i.action || i.action_hash || i.pre_images || i.post_images, 'UTF8')
                || {},
                convert_to(COALESCE(s.result, '') || COALESCE(i.result, ''), 'UTF8') || c.payload || {} || {}
         FROM steps s JOIN intents i ON i.run_id = s.run_id AND i.step_seq = s.seq
              JOIN checkpoints c ON c.run_id = s.run_id AND c.seq = s.seq + 1
         WHERE s.run_id = $1 ORDER BY s.seq",
        events("('intent.pending')", "AND a.step_seq = s.seq"),
        events("('intent.confirmed')", "AND a.step_seq = s.seq"),
        events("('checkpoint.written')", "AND (a.payload::jsonb ->> 'seq')::bigint = c.seq"),
    );
    let mut rows: Vec<(Vec<u8>, Vec<u8>)> = sqlx::query_as(&sql)
        .bind(run.to_string())
        .fetch_all(&pool)
        .await
        .unwrap();
    // Pre-images committed with the intents (small blobs live in the database), one per step.
    let blobs: Vec<Vec<u8>> = sqlx::query_scalar("SELECT bytes FROM blobs ORDER BY sha256")
        .fetch_all(&pool)
        .await
        .unwrap();
    let n = rows.len().max(1);
    for (k, blob) in blobs.into_iter().enumerate() {
        if let Some(row) = rows.get_mut(k % n) {
            row.0.extend_from_slice(&blob);
        }
    }
    pool.close().await;
    rows
}

/// Where the server's write-ahead log is now, in bytes: what a commit must flush is the difference.
async fn wal_position(url: &str) -> i64 {
    let pool = pg(url).await;
    let at: i64 = sqlx::query_scalar("SELECT (pg_current_wal_lsn() - '0/0')::BIGINT")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    at
}

/// A durable run of `steps` writes: each step's latency, the bytes of its two commits, and the
/// WAL bytes the run wrote.
async fn reins_steps(
    cluster: &reins_testpg::Cluster,
    steps: usize,
) -> (Vec<Duration>, Vec<(Vec<u8>, Vec<u8>)>, i64) {
    let url = cluster.database("bench_step").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let reins = Reins::open(
        DataDir::at(&dir.path().join("data")),
        options(&url, Arc::new(PermitAll), true),
    )
    .await
    .unwrap();
    let run = reins
        .create_plan_run(&plan(steps, 0), &ws, &Silent)
        .await
        .unwrap();
    let wal = wal_position(&url).await;
    let watch = Stopwatch(Mutex::new(vec![Instant::now()]));
    reins.drive(run, &watch).await.unwrap();
    let wal = wal_position(&url).await - wal;
    let marks = watch.0.lock().unwrap().clone();
    let latencies = marks.windows(2).map(|w| w[1] - w[0]).collect();
    drop(reins);
    (latencies, committed_bytes(&url, run).await, wal)
}

/// The baseline: each step's latency, and the WAL bytes it wrote.
async fn raw_steps(
    cluster: &reins_testpg::Cluster,
    commits: &[(Vec<u8>, Vec<u8>)],
) -> (Vec<Duration>, i64) {
    let url = cluster.database("bench_raw").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pool = pg(&url).await;
    for ddl in [
        // Compressed as Reins' large columns are (see the `lz4` migration).
        "CREATE TABLE journal (id BIGINT PRIMARY KEY, status TEXT, payload BYTEA COMPRESSION lz4)",
        "CREATE TABLE snapshots (id BIGINT PRIMARY KEY, payload BYTEA COMPRESSION lz4)",
    ] {
        sqlx::query(ddl).execute(&pool).await.unwrap();
    }
    let mut latencies = Vec::new();
    let wal = wal_position(&url).await;
    for (i, (first, second)) in commits.iter().enumerate() {
        let t = Instant::now();
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO journal (id, status, payload) VALUES ($1, 'pending', $2)")
            .bind(i as i64)
            .bind(first.as_slice())
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        atomic_write(dir.path(), &format!("{i}.conf"), content(i).as_bytes());
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("UPDATE journal SET status = 'confirmed' WHERE id = $1")
            .bind(i as i64)
            .execute(&mut *tx)
            .await
            .unwrap();
        sqlx::query("INSERT INTO snapshots (id, payload) VALUES ($1, $2)")
            .bind(i as i64)
            .bind(second.as_slice())
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        latencies.push(t.elapsed());
    }
    let wal = wal_position(&url).await - wal;
    pool.close().await;
    (latencies, wal)
}

/// `workers` workers over `runs` queued one-step runs: (claims per second, runs finished).
async fn claims(cluster: &reins_testpg::Cluster, workers: usize, runs: usize) -> (f64, u64) {
    let url = cluster.database("bench_claims").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let creator = Reins::open(
        DataDir::at(&dir.path().join("creator")),
        options(&url, Arc::new(PermitAll), true),
    )
    .await
    .unwrap();
    for i in 0..runs {
        creator
            .create_plan_run(&plan(1, i), &ws, &Silent)
            .await
            .unwrap();
    }
    let mut pool = Vec::new();
    for w in 0..workers {
        pool.push(Arc::new(
            Reins::open(
                DataDir::at(&dir.path().join(format!("worker{w}"))),
                options(&url, Arc::new(PermitAll), true),
            )
            .await
            .unwrap(),
        ));
    }
    let start = Instant::now();
    let tasks: Vec<_> = pool
        .iter()
        .map(|r| {
            let r = Arc::clone(r);
            tokio::spawn(async move { r.work(true, Duration::from_millis(20), &Silent).await })
        })
        .collect();
    let mut finished = 0;
    for t in tasks {
        finished += t.await.unwrap().unwrap().finished;
    }
    let elapsed = start.elapsed();
    (finished as f64 / elapsed.as_secs_f64(), finished as u64)
}

/// Approval to claim, `rounds` times: the worker polls every second, with or without listening.
async fn wake_ups(cluster: &reins_testpg::Cluster, listen: bool, rounds: usize) -> Vec<Duration> {
    let url = cluster.database("bench_wake").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let worker = Arc::new(
        Reins::open(
            DataDir::at(&dir.path().join("worker")),
            options(&url, Arc::new(AskWrites), listen),
        )
        .await
        .unwrap(),
    );
    let reviewer = Reins::open(
        DataDir::at(&dir.path().join("reviewer")),
        options(&url, Arc::new(AskWrites), listen),
    )
    .await
    .unwrap();
    let claimed = Arc::new(Claims(Mutex::new(Vec::new())));
    let looper = {
        let worker = Arc::clone(&worker);
        let claimed = Arc::clone(&claimed);
        tokio::spawn(async move {
            worker
                .work(false, Duration::from_millis(1000), claimed.as_ref())
                .await
        })
    };
    let mut out = Vec::new();
    for round in 0..rounds {
        let run = reviewer
            .create_plan_run(&plan(1, round), &ws, &Silent)
            .await
            .unwrap();
        // The worker claims it, reaches the write and stops for the review.
        let card = loop {
            let pending = reviewer
                .approvals(Some(ApprovalStatus::Pending), Some(run))
                .await
                .unwrap();
            if let Some(card) = pending.into_iter().next() {
                break card;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        // Let the worker settle into its wait, at a different phase of its poll each round.
        tokio::time::sleep(Duration::from_millis(300 + 77 * round as u64)).await;
        let before = claimed.0.lock().unwrap().len();
        let t = Instant::now();
        reviewer
            .approve(
                &card.id,
                ApproveRequest {
                    scope: Scope::Once,
                    pattern: None,
                    edited: None,
                    note: None,
                    expect_hash: None,
                    by: "user:bench".into(),
                },
            )
            .await
            .unwrap();
        let woke = loop {
            if let Some(at) = claimed.0.lock().unwrap().get(before).copied() {
                break at;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        out.push(woke.saturating_duration_since(t));
        worker
            .wait_until(run, Duration::from_millis(20), |s| s.is_terminal())
            .await
            .unwrap();
    }
    worker
        .drain_flag()
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = looper.await;
    out
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let steps = args.first().copied().unwrap_or(200);
    let runs = args.get(1).copied().unwrap_or(200);
    let approvals = args.get(2).copied().unwrap_or(9);
    let cluster = reins_testpg::Cluster::private().expect("a throwaway PostgreSQL 15 cluster");

    println!("team mode on PostgreSQL 15 (127.0.0.1, synchronous_commit = on)");
    let (mut reins, commits, reins_wal) = reins_steps(&cluster, steps).await;
    let (mut raw, raw_wal) = raw_steps(&cluster, &commits).await;
    let (r, b) = (median(&mut reins), median(&mut raw));
    let bytes: usize = commits
        .iter()
        .map(|(a, b)| a.len() + b.len())
        .sum::<usize>()
        / commits.len().max(1);
    println!(
        "durable step ({steps} steps, {bytes} B committed per step): reins median {:.2} ms ({:.0} steps/s); raw two commits of the same bytes {:.2} ms ({:.0} steps/s); ratio {:.2}x (goal >= 0.70)",
        ms(r),
        1.0 / r.as_secs_f64(),
        ms(b),
        1.0 / b.as_secs_f64(),
        b.as_secs_f64() / r.as_secs_f64()
    );
    let per_step = |wal: i64| wal / steps.max(1) as i64;
    println!(
        "  WAL written per step: reins {} B, raw {} B",
        per_step(reins_wal),
        per_step(raw_wal)
    );

    let (one, done_one) = claims(&cluster, 1, runs).await;
    let (eight, done_eight) = claims(&cluster, 8, runs).await;
    assert_eq!((done_one, done_eight), (runs as u64, runs as u64));
    println!(
        "claims ({runs} one-step runs, each finished once): 1 worker {one:.1} runs/s; 8 workers contending {eight:.1} runs/s; ratio {:.2}x",
        eight / one
    );

    let mut polled = wake_ups(&cluster, false, approvals).await;
    let mut listened = wake_ups(&cluster, true, approvals).await;
    let (p, l) = (median(&mut polled), median(&mut listened));
    println!(
        "approval to wake-up ({approvals} approvals from another machine, 1 s poll): LISTEN/NOTIFY median {:.1} ms (max {:.1}); polling only median {:.1} ms (max {:.1}); {:.0}x sooner (goal ~100 ms)",
        ms(l),
        ms(listened.last().copied().unwrap_or_default()),
        ms(p),
        ms(polled.last().copied().unwrap_or_default()),
        p.as_secs_f64() / l.as_secs_f64().max(1e-6)
    );
}
