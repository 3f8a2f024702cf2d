//! Benchmark: a long LLM run, for what grows with it.
//!
//!   cargo bench -p reins-core --features internals --bench long_run [-- TURNS REPS]   (defaults 1000 5)
//!
//! An LLM run against a canned local model server, under a policy that allows everything. Each turn
//! the model says about 450 bytes and reads a 4 KB file (`fs.read`), so a turn is two steps: the
//! model call and the read. The run is paused a few turns before TURNS (the run's limit is 1000
//! model calls), then:
//! - **bytes**: everything in the data dir (database, WAL, blobs) after the store is closed (which
//!   checkpoints the WAL), against the conversation plus tool outputs (what the model said and what
//!   the reads returned). Goal: at most 3× plus 2 MB.
//! - **time per turn**: the median gap between two model steps finishing, around turn 10 and at the
//!   end. Goal: the end at most 1.2× turn 10. The model's window (16k tokens) is full by turn 10,
//!   so the comparison shows what grows with the run, not a context still filling up to its
//!   budget (a request's size is bounded by the window, whatever the run's length); the median
//!   around turn 50 is printed beside it.
//! - **resume**: REPS times, a fresh instance (as a starting worker) resumes the paused run; from
//!   open to the next step's event (the run pauses again after it). Goal: median ≤ 100 ms.
//!
//! `LONG_RUN_DATA=DIR` keeps the data dir in DIR (empty or new) to look into afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/alloc.rs"]
mod alloc;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reins_core::api::{
    DataDir, DriveOutcome, LlmRunRequest, Observer, Options, Progress, Reins, ResumeMode,
};
use reins_core::ids::RunId;

#[path = "support/model_server.rs"]
mod model_server;
#[path = "support/permit_all.rs"]
mod permit_all;
use permit_all::PermitAll;

const FILE_BYTES: usize = 4096;

/// What the model says each turn: about 450 bytes, different every turn.
fn said(turn: usize) -> String {
    let mut s = format!("Turn {turn}: reading the notes again to check the next section. ");
    while s.len() < 450 {
        s.push_str("The notes list what is left to do, and I keep track of it here. ");
    }
    s.truncate(450);
    s
}

/// Records when each model step finishes, and asks the engine to drain once `stop_at` steps of any
/// kind have run in this drive.
struct Turns {
    model_done: Mutex<Vec<Instant>>,
    first_step: Mutex<Option<Instant>>,
    steps: Mutex<usize>,
    stop_after_steps: usize,
    drain: Arc<AtomicBool>,
}

impl Observer for Turns {
    fn on(&self, p: &Progress) {
        if let Progress::Step { tool, .. } = p {
            let now = Instant::now();
            self.first_step.lock().unwrap().get_or_insert(now);
            if tool == "model" {
                self.model_done.lock().unwrap().push(now);
            }
            let mut n = self.steps.lock().unwrap();
            *n += 1;
            if *n >= self.stop_after_steps {
                self.drain.store(true, Ordering::Relaxed);
            }
        }
    }
}

fn options() -> Options {
    Options {
        policy: Some(Arc::new(PermitAll)),
        ..Options::default()
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            total += dir_bytes(&entry.path());
        } else {
            total += meta.len();
        }
    }
    total
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn resume_once(data: &DataDir, id: RunId) -> Duration {
    {
        let person = Reins::open(data.clone(), options()).await.unwrap();
        person.resume(id, ResumeMode::Continue).await.unwrap();
        person.close().await;
    }
    let started = Instant::now();
    let worker = Reins::open(data.clone(), options()).await.unwrap();
    let obs = Turns {
        model_done: Mutex::new(Vec::new()),
        first_step: Mutex::new(None),
        steps: Mutex::new(0),
        stop_after_steps: 1,
        drain: worker.drain_flag(),
    };
    worker.drive(id, &obs).await.unwrap();
    let at = obs.first_step.lock().unwrap().expect("a step ran");
    worker.close().await;
    at - started
}

async fn bench(turns: usize, reps: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let notes: String = (0..)
        .map(|i| format!("line {i:04}: something still to do\n"))
        .take_while({
            let mut len = 0;
            move |l: &String| {
                len += l.len();
                len <= FILE_BYTES
            }
        })
        .collect();
    let notes = format!("{notes:<FILE_BYTES$}");
    std::fs::write(ws.join("notes.txt"), &notes).unwrap();
    let url = model_server::start(|i| {
        model_server::calls(
            &said(i + 1),
            &[(
                format!("call-{i}"),
                "fs_read".to_owned(),
                r#"{"path":"notes.txt"}"#.to_owned(),
            )],
        )
    });
    // LONG_RUN_DATA keeps the data dir there, to look into afterwards.
    let data = DataDir::at(
        &std::env::var_os("LONG_RUN_DATA")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| tmp.path().join("data")),
    );
    let reins = Reins::open(data.clone(), options()).await.unwrap();
    let req = LlmRunRequest {
        goal: "keep reading the notes".into(),
        name: Some("long".into()),
        base_url: Some(url),
        model: Some("bench".into()),
        max_turns: Some(1000),
        context_window: Some(16_000),
        ..LlmRunRequest::default()
    };
    let stop_turn = turns.saturating_sub(reps).max(10);
    let obs = Turns {
        model_done: Mutex::new(Vec::new()),
        first_step: Mutex::new(None),
        steps: Mutex::new(0),
        // Each turn is a model step and a read; stop right after the last turn's model step.
        stop_after_steps: 2 * stop_turn - 1,
        drain: reins.drain_flag(),
    };
    let started = Instant::now();
    let id = reins
        .create_run(req, &ws, &reins_core::api::Silent)
        .await
        .unwrap();
    match reins.drive(id, &obs).await.unwrap() {
        DriveOutcome::NeedsHuman { .. } => {}
        other => panic!("the run should have paused: {other:?}"),
    }
    let took = started.elapsed();
    reins.close().await;
    let done = obs.model_done.lock().unwrap().clone();
    assert_eq!(done.len(), stop_turn, "one model step per turn");
    let gaps: Vec<f64> = done
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0)
        .collect();
    // gaps[k] is the time of turn k + 2.
    let around = |turn: usize| -> f64 {
        let from = turn.saturating_sub(9).min(gaps.len());
        median(&mut gaps[from..(turn + 6).min(gaps.len())].to_vec())
    };
    let (early, fifty) = (around(10), around(50));
    let mut late: Vec<f64> = gaps[gaps.len().saturating_sub(15)..].to_vec();
    let late = median(&mut late);

    let content = stop_turn * (said(1).len() + notes.len());
    let bytes = dir_bytes(data.root());
    println!(
        "long_run bench: {stop_turn} turns (a {}-byte reply and a {FILE_BYTES}-byte read each), {:.1} s",
        said(1).len(),
        took.as_secs_f64()
    );
    let goal = 3.0 * content as f64 + 2e6;
    println!(
        "bytes: data dir {:.1} MB against {:.1} MB of conversation and tool output: {:.2}x, goal <= 3x + 2 MB = {:.1} MB: {}",
        bytes as f64 / 1e6,
        content as f64 / 1e6,
        bytes as f64 / content as f64,
        goal / 1e6,
        if bytes as f64 <= goal { "met" } else { "NOT met" }
    );
    let (manifests, records) = manifest_bytes(data.root()).await;
    println!(
        "  context manifests: {:.2} MB ({records} records, kept as changes to the call before)",
        manifests as f64 / 1e6
    );
    for (name, size) in [("database", "reins.db"), ("WAL", "reins.db-wal")] {
        let n = std::fs::metadata(data.root().join(size))
            .map(|m| m.len())
            .unwrap_or(0);
        println!("  {name}: {:.1} MB", n as f64 / 1e6);
    }
    println!(
        "  blobs: {:.1} MB",
        dir_bytes(&data.root().join("blobs")) as f64 / 1e6
    );
    println!(
        "time per turn: {early:.2} ms around turn 10, {fifty:.2} ms around turn 50, {late:.2} ms at turn {stop_turn}: {:.2}x (goal <= 1.2x): {}",
        late / early,
        if late <= 1.2 * early { "met" } else { "NOT met" }
    );
    let mut resumes = Vec::new();
    for _ in 0..reps {
        resumes.push(resume_once(&data, id).await.as_secs_f64() * 1000.0);
    }
    let shown: Vec<String> = resumes.iter().map(|r| format!("{r:.1}")).collect();
    let m = median(&mut resumes);
    println!(
        "resume at turn {stop_turn}: median {m:.1} ms of [{}] (goal <= 100 ms): {}",
        shown.join(", "),
        if m <= 100.0 { "met" } else { "NOT met" }
    );
}

/// The stored context manifests: their bytes and how many.
async fn manifest_bytes(root: &Path) -> (i64, i64) {
    use sqlx::sqlite::SqliteConnectOptions;
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(SqliteConnectOptions::new().filename(root.join("reins.db")))
        .await
        .unwrap();
    let row: (i64, i64) = sqlx::query_as(
        "SELECT COALESCE(SUM(LENGTH(manifest)), 0), COUNT(*) FROM context_manifests",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    pool.close().await;
    row
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let turns = args.first().copied().unwrap_or(1000).min(1000);
    let reps = args.get(1).copied().unwrap_or(5).max(1);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(bench(turns, reps));
}
