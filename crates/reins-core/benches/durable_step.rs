//! Benchmark: the cost of durability.
//!
//! Reins: a script run of N `fs.write` steps; each step is validate → preview → intent (FULL commit)
//! → atomic file write → confirm + checkpoint + audit, held and committed inside the next step's
//! intent transaction (the last one with the run's end): one durable commit per step. Per-step
//! latency is the time between consecutive step events.
//!
//! Baseline, in the same process on the same disk, right after: per step, one FULL commit on a raw
//! SQLite database (same pragmas) carrying the bytes Reins committed in that step's two
//! transactions (read back from what Reins stored), then the same atomic file write (temp, fsync,
//! rename, directory fsync): the least durable work a journaled write can do once its
//! confirmation need not be synced on its own. The ratio is what the harness's structure costs
//! (several tables and indexes, statements, hashing, the jail). Printed beside it: two FULL commits
//! of the same bytes around the write (the durable step before its confirmation rode along), and a
//! stricter two-commit baseline that writes only the intent row and the checkpoint.
//!
//! Also: checkpoint load + verify throughput (read rows, SHA-256, decode), in MB/s.
//!
//! `cargo bench -p reins-core --bench durable_step [-- STEPS ROUNDS]` (defaults 200 steps, 4 rounds).
//! `DURABLE_STEP_ONLY=reins` skips the baselines (to profile one side with strace or perf).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/alloc.rs"]
mod alloc;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reins_core::api::{DataDir, Options, Plan, Reins, RunId};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

#[path = "support/steps.rs"]
mod steps;
use steps::{atomic_write, content, Stopwatch};

#[path = "support/permit_all.rs"]
mod permit_all;
use permit_all::PermitAll;

fn plan(steps: usize, overwrite: bool) -> Plan {
    let steps: Vec<serde_json::Value> = (0..steps)
        .map(|i| {
            serde_json::json!({
                "tool": "fs.write",
                "args": {
                    "path": if overwrite { format!("conf/{}.conf", i % 10) } else { format!("conf/{i}.conf") },
                    "content": content(i),
                },
                "why": "benchmark",
            })
        })
        .collect();
    let text = serde_json::json!({ "name": "bench", "goal": "measure", "steps": steps });
    Plan::from_json(&text.to_string()).unwrap()
}

/// Payload bytes of one step's two commits.
struct Sizes {
    /// Everything Reins committed in each transaction.
    commit1: usize,
    commit2: usize,
    /// The intent row alone and the checkpoint alone (the stricter baseline).
    intent_only: usize,
    checkpoint_only: usize,
}

struct ReinsRound {
    latencies: Vec<Duration>,
    total: Duration,
    sizes: Vec<Sizes>,
    reins: Reins,
    run: RunId,
}

async fn reins_round(dir: &Path, steps: usize, overwrite: bool) -> ReinsRound {
    let ws_dir = dir.join("ws");
    std::fs::create_dir_all(&ws_dir).unwrap();
    let options = Options {
        lease_ms: 30_000,
        policy: Some(Arc::new(PermitAll)),
        ..Options::default()
    };
    let reins = Reins::open(DataDir::at(dir), options).await.unwrap();
    let quiet = Stopwatch(Mutex::new(Vec::new()));
    let run = reins
        .create_run(&plan(steps, overwrite), &ws_dir, &quiet)
        .await
        .unwrap();
    let watch = Stopwatch(Mutex::new(Vec::new()));
    let start = Instant::now();
    watch.0.lock().unwrap().push(start);
    reins.drive(run, &watch).await.unwrap();
    let total = start.elapsed();
    let marks = watch.0.lock().unwrap().clone();
    let latencies = marks.windows(2).map(|w| w[1] - w[0]).collect();
    let sizes = committed_sizes(&reins, run, steps).await;
    ReinsRound {
        latencies,
        total,
        sizes,
        reins,
        run,
    }
}

/// Bytes Reins committed in each of a step's two transactions, read back from what it stored.
/// Commit 1 (intent): the step row (action, preview, reason), the intent row, its pre-images, its
/// audit event.
/// Commit 2 (confirm): the checkpoint, the step's and the intent's results, two audit events.
async fn committed_sizes(reins: &Reins, run: RunId, steps: usize) -> Vec<Sizes> {
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(SqliteConnectOptions::new().filename(reins.database()))
        .await
        .unwrap();
    let pool = &pool;
    let rows: Vec<(i64, i64, i64, i64)> = sqlx::query_as(
        "SELECT LENGTH(s.action) + LENGTH(COALESCE(s.preview, '')) + LENGTH(COALESCE(s.why, '')) + LENGTH(s.action_hash),
                LENGTH(i.id) + LENGTH(i.action) + LENGTH(i.action_hash) + LENGTH(i.pre_images) + LENGTH(i.post_images),
                LENGTH(COALESCE(s.result, '')) + LENGTH(COALESCE(i.result, '')),
                (SELECT c.size FROM checkpoints c WHERE c.run_id = s.run_id AND c.seq = s.seq + 1)
         FROM steps s JOIN intents i ON i.run_id = s.run_id AND i.step_seq = s.seq
         WHERE s.run_id = ? ORDER BY s.seq",
    )
    .bind(run.to_string())
    .fetch_all(pool)
    .await
    .unwrap();
    // Pre-images committed with the intents (small blobs live in the database).
    let blob_bytes: i64 = sqlx::query_scalar("SELECT COALESCE(SUM(size), 0) FROM blobs")
        .fetch_one(pool)
        .await
        .unwrap();
    let pre_images = blob_bytes as usize / steps.max(1);
    let mut audit = [0usize; 2];
    for (slot, kinds) in [
        (0, "('intent.pending')"),
        (1, "('intent.confirmed', 'checkpoint.written')"),
    ] {
        // Each audit row carries its payload and two 64-character hashes.
        let total: i64 = sqlx::query_scalar(&format!(
            "SELECT COALESCE(SUM(LENGTH(payload) + LENGTH(kind) + 128), 0) FROM audit_events WHERE run_id = ? AND kind IN {kinds}"
        ))
        .bind(run.to_string())
        .fetch_one(pool)
        .await
        .unwrap();
        audit[slot] = total as usize / steps.max(1);
    }
    rows.iter()
        .map(|(step, intent, results, cp)| Sizes {
            commit1: (*step + *intent) as usize + audit[0] + pre_images,
            commit2: (*results + *cp) as usize + audit[1],
            intent_only: *intent as usize,
            checkpoint_only: *cp as usize,
        })
        .collect()
}

/// What a raw baseline commits per step around the same atomic write.
#[derive(Clone, Copy, PartialEq)]
enum Raw {
    /// One FULL commit of all the step's bytes: the least durable work once the confirmation
    /// rides with the next commit.
    OneCommit,
    /// Two FULL commits of the same bytes as Reins' two transactions.
    TwoCommits,
    /// Two FULL commits of only the intent row and the checkpoint.
    Strict,
}

/// The raw baseline's steps, per step.
async fn baseline_round(
    dir: &Path,
    sizes: &[Sizes],
    overwrite: bool,
    raw: Raw,
) -> (Vec<Duration>, Duration) {
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let options = SqliteConnectOptions::new()
        .filename(dir.join("raw.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10));
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .test_before_acquire(false)
        .connect_with(options)
        .await
        .unwrap();
    sqlx::query("CREATE TABLE journal (id INTEGER PRIMARY KEY, status TEXT, payload BLOB)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("CREATE TABLE snapshots (id INTEGER PRIMARY KEY, payload BLOB)")
        .execute(&pool)
        .await
        .unwrap();
    let mut latencies = Vec::new();
    let start = Instant::now();
    for (i, s) in sizes.iter().enumerate() {
        let (first, second) = match raw {
            Raw::OneCommit => (s.commit1 + s.commit2, 0),
            Raw::TwoCommits => (s.commit1, s.commit2),
            Raw::Strict => (s.intent_only, s.checkpoint_only),
        };
        let t = Instant::now();
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
        sqlx::query("INSERT INTO journal (id, status, payload) VALUES (?, 'pending', ?)")
            .bind(i as i64)
            .bind(vec![b'i'; first])
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let name = if overwrite {
            format!("{}.conf", i % 10)
        } else {
            format!("{i}.conf")
        };
        atomic_write(&files, &name, content(i).as_bytes());
        if raw == Raw::OneCommit {
            latencies.push(t.elapsed());
            continue;
        }
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
        sqlx::query("UPDATE journal SET status = 'confirmed' WHERE id = ?")
            .bind(i as i64)
            .execute(&mut *tx)
            .await
            .unwrap();
        sqlx::query("INSERT INTO snapshots (id, payload) VALUES (?, ?)")
            .bind(i as i64)
            .bind(vec![b'c'; second])
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        latencies.push(t.elapsed());
    }
    let total = start.elapsed();
    pool.close().await;
    (latencies, total)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

struct Round {
    ours_p50: f64,
    ours_p99: f64,
    ours_rate: f64,
    base_p50: f64,
    base_p99: f64,
    base_rate: f64,
    two_rate: f64,
    strict_rate: f64,
    load_mbps: f64,
}

async fn round(steps: usize, overwrite: bool, baseline_first: bool) -> Round {
    let tmp = tempfile::tempdir().unwrap();
    let only_reins = std::env::var("DURABLE_STEP_ONLY").as_deref() == Ok("reins");
    // The baselines need the sizes Reins committed, so a baseline-first round sizes itself from a
    // short warm-up run of Reins; either way the two measured sides run back to back, and the order
    // alternates between rounds so slow drift on a shared machine does not favour one side.
    let sizing = if baseline_first && !only_reins {
        Some(reins_round(&tmp.path().join("sizing"), steps, overwrite).await)
    } else {
        None
    };
    let baselines = |sizes: &[Sizes]| {
        let (a, b, c) = (
            tmp.path().join("raw-one-commit"),
            tmp.path().join("raw-two-commits"),
            tmp.path().join("raw-strict"),
        );
        let sizes: Vec<Sizes> = sizes
            .iter()
            .map(|s| Sizes {
                commit1: s.commit1,
                commit2: s.commit2,
                intent_only: s.intent_only,
                checkpoint_only: s.checkpoint_only,
            })
            .collect();
        async move {
            if only_reins {
                let ms = Duration::from_millis(1);
                return (vec![ms], ms, ms, ms);
            }
            let (base, base_total) = baseline_round(&a, &sizes, overwrite, Raw::OneCommit).await;
            let (_, two_total) = baseline_round(&b, &sizes, overwrite, Raw::TwoCommits).await;
            let (_, strict_total) = baseline_round(&c, &sizes, overwrite, Raw::Strict).await;
            (base, base_total, two_total, strict_total)
        }
    };
    let (mut ours, (mut base, base_total, two_total, strict_total)) = match sizing {
        Some(sizing) => {
            let measured = baselines(&sizing.sizes).await;
            sizing.reins.close().await;
            (
                reins_round(&tmp.path().join("reins"), steps, overwrite).await,
                measured,
            )
        }
        None => {
            let ours = reins_round(&tmp.path().join("reins"), steps, overwrite).await;
            let measured = baselines(&ours.sizes).await;
            (ours, measured)
        }
    };
    ours.latencies.sort();
    base.sort();

    // Checkpoint load + verify: every checkpoint of the run, read back, hashed and decoded.
    let t = Instant::now();
    let mut bytes = 0i64;
    let mut loads = 0;
    while t.elapsed() < Duration::from_millis(500) || loads < 3 {
        let inspected = ours.reins.checkpoints(ours.run).await.unwrap();
        assert!(inspected.iter().all(|i| i.status == "ok"));
        bytes += inspected.iter().map(|i| i.size).sum::<i64>();
        loads += 1;
    }
    let load_mbps = bytes as f64 / 1e6 / t.elapsed().as_secs_f64();
    ours.reins.close().await;
    Round {
        ours_p50: percentile(&ours.latencies, 0.5),
        ours_p99: percentile(&ours.latencies, 0.99),
        ours_rate: steps as f64 / ours.total.as_secs_f64(),
        base_p50: percentile(&base, 0.5),
        base_p99: percentile(&base, 0.99),
        base_rate: steps as f64 / base_total.as_secs_f64(),
        two_rate: steps as f64 / two_total.as_secs_f64(),
        strict_rate: steps as f64 / strict_total.as_secs_f64(),
        load_mbps,
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let steps = args.first().copied().unwrap_or(200).max(2);
    let rounds = args.get(1).copied().unwrap_or(4).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "durable fs.write steps: {steps} steps x {rounds} rounds; figures are medians over rounds"
    );
    for (label, overwrite) in [
        ("create new files", false),
        ("overwrite existing files (pre-image kept)", true),
    ] {
        let rs: Vec<Round> = (0..rounds)
            .map(|i| rt.block_on(round(steps, overwrite, i % 2 == 1)))
            .collect();
        let m = |f: fn(&Round) -> f64| median(rs.iter().map(f).collect());
        let ratios: Vec<f64> = rs.iter().map(|r| r.ours_rate / r.base_rate).collect();
        println!("\n{label}");
        println!(
            "  reins     {:7.1} steps/s   p50 {:6.2} ms   p99 {:6.2} ms",
            m(|r| r.ours_rate),
            m(|r| r.ours_p50),
            m(|r| r.ours_p99)
        );
        println!(
            "  baseline  {:7.1} steps/s   p50 {:6.2} ms   p99 {:6.2} ms   (one raw FULL commit of the step's bytes + the same write)",
            m(|r| r.base_rate),
            m(|r| r.base_p50),
            m(|r| r.base_p99)
        );
        println!(
            "  ratio reins/baseline: {:.2}x  (rounds: {})  target >= 0.80x",
            median(ratios.clone()),
            ratios
                .iter()
                .map(|r| format!("{r:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!(
            "  two raw FULL commits of the same bytes + the same write: {:7.1} steps/s; reins against it: {:.2}x",
            m(|r| r.two_rate),
            m(|r| r.ours_rate / r.two_rate)
        );
        println!(
            "  stricter ratio, vs two raw commits of only the intent row and the checkpoint: {:.2}x",
            m(|r| r.ours_rate / r.strict_rate)
        );
        println!(
            "  p50 overhead over baseline: {:+.2} ms",
            m(|r| r.ours_p50 - r.base_p50)
        );
        println!("  checkpoint load + verify: {:.1} MB/s", m(|r| r.load_mbps));
    }
}
