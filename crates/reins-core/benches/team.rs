//! Benchmark: team mode on a shared PostgreSQL 15 (a throwaway cluster from Debian's binaries,
//! started by `reins-testpg` on 127.0.0.1; `synchronous_commit = on`).
//!
//! 1. The durable step on PostgreSQL: a script run of N `fs.write` steps, each with its two
//!    commits (intent; confirm + checkpoint + audit), in several rounds. After each round, on the
//!    same server, three raw baselines commit what that round's steps committed (read back from
//!    what Reins stored, into columns compressed as Reins' are), around the same atomic file
//!    write (to a new file, as a step writes), taking turns to go first:
//!    - the issue's: per commit the same rows with the same bytes, and the same commits (each
//!      transaction `BEGIN`, one statement, `COMMIT`);
//!    - a stricter one on rows: per commit all of its bytes in one row;
//!    - a stricter one on round trips: the rows, each commit one statement sent alone
//!      (no `BEGIN` and `COMMIT`), as Reins sends a step's commits.
//!
//!    Ratios are taken within a round and their median printed; also the WAL each wrote per step.
//! 2. Claims per second: 8 workers (each its own connection pool and identity, as 8 machines would
//!    be) race over R queued one-step runs; baseline, one worker over as many. Every run must
//!    finish once.
//! 3. Approval to wake-up: a worker waits with a 1 s poll; another "machine" approves the run's
//!    write; the time until the worker has claimed the run again. LISTEN/NOTIFY against the same
//!    worker polling only.
//!
//! `cargo bench -p reins-core --bench team [-- STEPS RUNS APPROVALS ROUNDS]` (defaults 200, 200,
//! 9, 3). With `REINS_TEST_PG_URL` set, it runs on that server instead of a throwaway cluster (for
//! example one started with `pg_stat_statements`, to see where the server's time goes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/alloc.rs"]
mod alloc;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reins_core::api::{
    Action, ApprovalStatus, ApproveRequest, DataDir, Decision, Observer, Options, Plan, Policy,
    PolicyContext, Progress, Reins, Risk, Scope, Silent, Verdict,
};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

#[path = "support/steps.rs"]
mod steps;
use steps::content;

#[path = "support/permit_all.rs"]
mod permit_all;
use permit_all::PermitAll;

#[path = "support/team_step.rs"]
mod team_step;

/// Asks a person about every write: the approval-to-wake-up part.
struct AskWrites;

impl Policy for AskWrites {
    fn classify(&self, action: &Action, _cx: &PolicyContext<'_>) -> Verdict {
        let write = action.tool() == "fs.write";
        Verdict {
            on_timeout: None,
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
        creator.create_run(&plan(1, i), &ws, &Silent).await.unwrap();
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
            .create_run(&plan(1, round), &ws, &Silent)
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
                    leave_out: Vec::new(),
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
    let rounds = args.get(3).copied().unwrap_or(3).max(1);
    let owned;
    let cluster: &reins_testpg::Cluster = if std::env::var("REINS_TEST_PG_URL").is_ok() {
        reins_testpg::Cluster::shared().expect("the server REINS_TEST_PG_URL names")
    } else {
        owned = reins_testpg::Cluster::private().expect("a throwaway PostgreSQL 15 cluster");
        &owned
    };

    println!("team mode on PostgreSQL 15 (127.0.0.1, synchronous_commit = on)");
    team_step::durable_step(cluster, steps, rounds).await;

    let (one, done_one) = claims(cluster, 1, runs).await;
    let (eight, done_eight) = claims(cluster, 8, runs).await;
    assert_eq!((done_one, done_eight), (runs as u64, runs as u64));
    println!(
        "claims ({runs} one-step runs, each finished once): 1 worker {one:.1} runs/s; 8 workers contending {eight:.1} runs/s; ratio {:.2}x",
        eight / one
    );

    let mut polled = wake_ups(cluster, false, approvals).await;
    let mut listened = wake_ups(cluster, true, approvals).await;
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
