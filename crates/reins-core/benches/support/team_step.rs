//! The durable step on PostgreSQL, for the `team` bench: Reins' runs against two raw baselines
//! committing what Reins committed, round by round (see the bench's own comment).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reins_core::api::{DataDir, Reins, RunId, Silent};

use super::permit_all::PermitAll;
use super::steps::{atomic_write, content, Stopwatch};
use super::{median, ms, options, pg, plan};

/// What Reins committed for one step, row by row, read back from what it stored (so a baseline
/// compresses what Reins compressed). The first transaction inserted the step, its intent, its
/// pre-images and their audit events; the second updated the step and the intent with their
/// results and inserted the checkpoint and its events.
#[derive(Default)]
struct StepRows {
    step: Vec<u8>,
    intent: Vec<u8>,
    first_events: Vec<Vec<u8>>,
    blobs: Vec<Vec<u8>>,
    step_result: Vec<u8>,
    intent_result: Vec<u8>,
    checkpoint: Vec<u8>,
    second_events: Vec<Vec<u8>>,
}

impl StepRows {
    /// The bytes of each transaction, as one payload apiece.
    fn joined(&self) -> (Vec<u8>, Vec<u8>) {
        let first = [&self.step, &self.intent]
            .into_iter()
            .chain(&self.first_events)
            .chain(&self.blobs)
            .flatten()
            .copied()
            .collect();
        let second = [&self.step_result, &self.intent_result, &self.checkpoint]
            .into_iter()
            .chain(&self.second_events)
            .flatten()
            .copied()
            .collect();
        (first, second)
    }

    fn bytes(&self) -> usize {
        let (a, b) = self.joined();
        a.len() + b.len()
    }
}

/// A step as read back: seq, step row, intent row, step result, intent result, checkpoint.
type StoredStep = (i64, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);

async fn committed_rows(url: &str, run: RunId) -> Vec<StepRows> {
    let pool = pg(url).await;
    let run = run.to_string();
    let rows: Vec<StoredStep> = sqlx::query_as(
        "SELECT s.seq,
                convert_to(s.kind || s.tool || s.action || s.action_hash || COALESCE(s.why, '') || s.status
                           || COALESCE(s.risk, '') || COALESCE(s.reasons, '') || COALESCE(s.preview, ''), 'UTF8'),
                convert_to(i.id || i.tool || i.action || i.action_hash || i.effect_class || i.pre_images
                           || i.post_images, 'UTF8'),
                convert_to(s.status || COALESCE(s.result, ''), 'UTF8'),
                convert_to(i.status || COALESCE(i.result, '') || COALESCE(i.settled_by, ''), 'UTF8'),
                COALESCE(c.payload, (SELECT b.bytes FROM blobs b WHERE b.sha256 = c.blob))
         FROM steps s JOIN intents i ON i.run_id = s.run_id AND i.step_seq = s.seq
              JOIN checkpoints c ON c.run_id = s.run_id AND c.seq = s.seq + 1
         WHERE s.run_id = $1 ORDER BY s.seq",
    )
    .bind(&run)
    .fetch_all(&pool)
    .await
    .unwrap();
    let mut steps: std::collections::BTreeMap<i64, StepRows> = rows
        .into_iter()
        .map(
            |(seq, step, intent, step_result, intent_result, checkpoint)| {
                let rows = StepRows {
                    step,
                    intent,
                    step_result,
                    intent_result,
                    checkpoint,
                    ..StepRows::default()
                };
                (seq, rows)
            },
        )
        .collect();
    // Each event with the step it belongs to: a step's own events carry its seq; a checkpoint's
    // belongs to the step before it.
    let events: Vec<(i64, String, Vec<u8>)> = sqlx::query_as(
        "SELECT COALESCE(step_seq, (payload::jsonb ->> 'seq')::bigint - 1), kind,
                convert_to(kind || actor || payload || prev_hash || hash, 'UTF8')
         FROM audit_events
         WHERE run_id = $1 AND kind IN ('policy.decided', 'intent.pending', 'intent.confirmed', 'checkpoint.written')
         ORDER BY seq",
    )
    .bind(&run)
    .fetch_all(&pool)
    .await
    .unwrap();
    for (seq, kind, bytes) in events {
        if let Some(step) = steps.get_mut(&seq) {
            match kind.as_str() {
                "policy.decided" | "intent.pending" => step.first_events.push(bytes),
                _ => step.second_events.push(bytes),
            }
        }
    }
    let mut steps: Vec<StepRows> = steps.into_values().collect();
    // Pre-images committed with the intents (small blobs live in the database).
    let blobs: Vec<Vec<u8>> = sqlx::query_scalar("SELECT bytes FROM blobs ORDER BY sha256")
        .fetch_all(&pool)
        .await
        .unwrap();
    let n = steps.len().max(1);
    for (k, blob) in blobs.into_iter().enumerate() {
        if let Some(step) = steps.get_mut(k % n) {
            step.blobs.push(blob);
        }
    }
    pool.close().await;
    steps
}

/// Where the server's write-ahead log is now, in bytes: what a commit must flush is the difference.
async fn wal_position(pool: &sqlx::PgPool) -> i64 {
    sqlx::query_scalar("SELECT (pg_current_wal_lsn() - '0/0')::BIGINT")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Step latencies and the WAL bytes written per step.
struct Timed {
    latencies: Vec<Duration>,
    wal_per_step: i64,
}

/// A durable run of `steps` writes (each round a new run on the same database): each step's
/// latency, what it committed, and the WAL the run wrote.
async fn reins_steps(
    url: &str,
    reins: &Reins,
    ws: &std::path::Path,
    steps: usize,
    round: usize,
) -> (Timed, Vec<StepRows>) {
    let run = reins
        .create_run(&plan(steps, round * steps), ws, &Silent)
        .await
        .unwrap();
    let probe = pg(url).await;
    let wal = wal_position(&probe).await;
    let watch = Stopwatch(Mutex::new(vec![Instant::now()]));
    reins.drive(run, &watch).await.unwrap();
    let wal = wal_position(&probe).await - wal;
    probe.close().await;
    let marks = watch.0.lock().unwrap().clone();
    let latencies = marks.windows(2).map(|w| w[1] - w[0]).collect();
    let timed = Timed {
        latencies,
        wal_per_step: wal / steps.max(1) as i64,
    };
    (timed, committed_rows(url, run).await)
}

/// The raw baselines' tables: plain, with a primary key each, compressed as Reins' large columns
/// are (see the `lz4` migration).
async fn raw_tables(url: &str) -> sqlx::PgPool {
    let pool = pg(url).await;
    for ddl in [
        "CREATE TABLE journal (id BIGINT PRIMARY KEY, status TEXT, payload BYTEA COMPRESSION lz4)",
        "CREATE TABLE snapshots (id BIGINT PRIMARY KEY, payload BYTEA COMPRESSION lz4)",
        "CREATE TABLE step_rows (id BIGINT PRIMARY KEY, payload BYTEA COMPRESSION lz4, result BYTEA COMPRESSION lz4)",
        "CREATE TABLE intent_rows (id BIGINT PRIMARY KEY, payload BYTEA COMPRESSION lz4, result BYTEA COMPRESSION lz4)",
        "CREATE TABLE event_rows (id BIGINT PRIMARY KEY, payload BYTEA COMPRESSION lz4)",
        "CREATE TABLE blob_rows (id BIGINT PRIMARY KEY, payload BYTEA COMPRESSION lz4)",
        "CREATE TABLE checkpoint_rows (id BIGINT PRIMARY KEY, payload BYTEA COMPRESSION lz4)",
    ] {
        sqlx::query(ddl).execute(&pool).await.unwrap();
    }
    pool
}

/// Which raw baseline.
#[derive(Clone, Copy)]
enum Raw {
    /// The issue's: per commit, the same rows with the same bytes as Reins' (each transaction
    /// one statement, so the fewest round trips).
    SameRows,
    /// Stricter: per commit, all of its bytes in one row (the second also confirms the first).
    OneRow,
    /// The rows, each commit one statement sent on its own with no `BEGIN` and `COMMIT`
    /// around it (one round trip, as Reins' step commits are): the strictest on round trips.
    SameRowsAlone,
}

const SAME_ROWS_FIRST: &str = "WITH s AS (INSERT INTO step_rows (id, payload) VALUES ($1, $2)),
          i AS (INSERT INTO intent_rows (id, payload) VALUES ($1, $3)),
          b AS (INSERT INTO blob_rows (id, payload)
                SELECT $1 * 64 + n, p FROM unnest($5::bytea[]) WITH ORDINALITY AS u (p, n))
     INSERT INTO event_rows (id, payload)
     SELECT $1 * 64 + n, p FROM unnest($4::bytea[]) WITH ORDINALITY AS u (p, n)";

const SAME_ROWS_SECOND: &str = "WITH s AS (UPDATE step_rows SET result = $2 WHERE id = $1),
          i AS (UPDATE intent_rows SET result = $3 WHERE id = $1),
          c AS (INSERT INTO checkpoint_rows (id, payload) VALUES ($1, $4))
     INSERT INTO event_rows (id, payload)
     SELECT $1 * 64 + 32 + n, p FROM unnest($5::bytea[]) WITH ORDINALITY AS u (p, n)";

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// The first commit of a step: its step, intent, pre-images and events.
fn same_rows_first(id: i64, step: &StepRows) -> PgQuery<'_> {
    sqlx::query(SAME_ROWS_FIRST)
        .bind(id)
        .bind(step.step.as_slice())
        .bind(step.intent.as_slice())
        .bind(step.first_events.as_slice())
        .bind(step.blobs.as_slice())
}

/// The second commit: the results, the checkpoint and its events.
fn same_rows_second(id: i64, step: &StepRows) -> PgQuery<'_> {
    sqlx::query(SAME_ROWS_SECOND)
        .bind(id)
        .bind(step.step_result.as_slice())
        .bind(step.intent_result.as_slice())
        .bind(step.checkpoint.as_slice())
        .bind(step.second_events.as_slice())
}

/// A raw baseline over `rows` (ids from `*next` on): each step's latency, and the WAL per step.
async fn raw_steps(
    pool: &sqlx::PgPool,
    dir: &std::path::Path,
    rows: &[StepRows],
    raw: Raw,
    next: &mut i64,
) -> Timed {
    let joined: Vec<(Vec<u8>, Vec<u8>)> = rows.iter().map(StepRows::joined).collect();
    let mut latencies = Vec::new();
    let wal = wal_position(pool).await;
    for (i, (step, (first, second))) in rows.iter().zip(&joined).enumerate() {
        let id = *next;
        *next += 1;
        let t = Instant::now();
        if let Raw::SameRowsAlone = raw {
            same_rows_first(id, step).execute(pool).await.unwrap();
            atomic_write(dir, &format!("{id}.conf"), content(i).as_bytes());
            same_rows_second(id, step).execute(pool).await.unwrap();
            latencies.push(t.elapsed());
            continue;
        }
        let mut tx = pool.begin().await.unwrap();
        match raw {
            Raw::SameRows | Raw::SameRowsAlone => {
                same_rows_first(id, step).execute(&mut *tx).await.unwrap();
            }
            Raw::OneRow => {
                sqlx::query("INSERT INTO journal (id, status, payload) VALUES ($1, 'pending', $2)")
                    .bind(id)
                    .bind(first.as_slice())
                    .execute(&mut *tx)
                    .await
                    .unwrap();
            }
        }
        tx.commit().await.unwrap();
        // A new file each step, as Reins' steps write (replacing one would also free an inode).
        atomic_write(dir, &format!("{id}.conf"), content(i).as_bytes());
        let mut tx = pool.begin().await.unwrap();
        match raw {
            Raw::SameRows | Raw::SameRowsAlone => {
                same_rows_second(id, step).execute(&mut *tx).await.unwrap();
            }
            Raw::OneRow => {
                sqlx::query("UPDATE journal SET status = 'confirmed' WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                sqlx::query("INSERT INTO snapshots (id, payload) VALUES ($1, $2)")
                    .bind(id)
                    .bind(second.as_slice())
                    .execute(&mut *tx)
                    .await
                    .unwrap();
            }
        }
        tx.commit().await.unwrap();
        latencies.push(t.elapsed());
    }
    let wal = wal_position(pool).await - wal;
    Timed {
        latencies,
        wal_per_step: wal / rows.len().max(1) as i64,
    }
}

/// `rounds` rounds of a Reins run of `steps` writes, each followed by both baselines over what it
/// committed (in turn first), on the same server: the ratios are taken within a round, so a
/// slow spell of the shared machine weighs on both sides alike.
pub async fn durable_step(cluster: &reins_testpg::Cluster, steps: usize, rounds: usize) {
    let url = cluster.database("bench_step").unwrap();
    let raw_url = cluster.database("bench_raw").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let raw_dir = dir.path().join("raw");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&raw_dir).unwrap();
    let reins = Reins::open(
        DataDir::at(&dir.path().join("data")),
        options(&url, Arc::new(PermitAll), true),
    )
    .await
    .unwrap();
    let raw = raw_tables(&raw_url).await;
    let mut next = 0;
    let mut all_reins = Vec::new();
    let kinds = [Raw::SameRows, Raw::OneRow, Raw::SameRowsAlone];
    // Per baseline: all latencies, the ratio of each round, WAL per step summed over rounds.
    let mut all: [Vec<Duration>; 3] = Default::default();
    let mut ratios: [Vec<f64>; 3] = Default::default();
    let mut wal = [0i64; 3];
    let mut wal_reins = 0;
    let mut bytes = 0;
    for round in 0..rounds {
        let (mut r, rows) = reins_steps(&url, &reins, &ws, steps, round).await;
        let reins_median = median(&mut r.latencies);
        // The baselines take turns to go first.
        for k in 0..kinds.len() {
            let at = (k + round) % kinds.len();
            let mut timed = raw_steps(&raw, &raw_dir, &rows, kinds[at], &mut next).await;
            ratios[at]
                .push(median(&mut timed.latencies).as_secs_f64() / reins_median.as_secs_f64());
            wal[at] += timed.wal_per_step;
            all[at].append(&mut timed.latencies);
        }
        wal_reins += r.wal_per_step;
        bytes += rows.iter().map(StepRows::bytes).sum::<usize>() / rows.len().max(1);
        all_reins.append(&mut r.latencies);
    }
    raw.close().await;
    let n = rounds as i64;
    let r = median(&mut all_reins);
    println!(
        "durable step ({rounds} rounds of {steps} steps, {} B committed per step): reins median {:.2} ms ({:.0} steps/s)",
        bytes / rounds,
        ms(r),
        1.0 / r.as_secs_f64()
    );
    let labels = [
        "raw, the same rows and bytes per commit (BEGIN, one statement, COMMIT)",
        "raw, one row per commit (stricter on rows)",
        "raw, the same rows, each commit one statement alone (stricter on round trips)",
    ];
    for k in 0..kinds.len() {
        ratios[k].sort_by(f64::total_cmp);
        let (mid, lo, hi) = (
            ratios[k][ratios[k].len() / 2],
            ratios[k][0],
            ratios[k][ratios[k].len() - 1],
        );
        let goal = if k == 0 { "; goal >= 0.70" } else { "" };
        println!(
            "  {}: median {:.2} ms; ratio {mid:.2}x (rounds {lo:.2}-{hi:.2}{goal})",
            labels[k],
            ms(median(&mut all[k]))
        );
    }
    println!(
        "  WAL written per step: reins {} B, raw same rows {} B, raw one row {} B, raw alone {} B",
        wal_reins / n,
        wal[0] / n,
        wal[1] / n,
        wal[2] / n
    );
}
