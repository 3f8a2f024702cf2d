//! Benchmark: recovery.
//!
//! 1. Recovery time: a run with 10,000 completed steps is paused; a fresh process-like instance
//!    (`Reins::open`, as a starting worker does) resumes it. Measured from open to the next step's
//!    event: open, claim, verify the checkpoints written since the last verified one and pick the
//!    recovery point, settle the journal, fingerprint the workspace, write the recovery summary, run
//!    one step. Beside it, in the same run, the same for a run with 10 completed steps; the ratio
//!    says what the 10,000 cost. The first resume verifies the whole run (nothing was verified
//!    before it); the median is of the later ones' kind.
//! 2. Workspace fingerprint on 20,000 and 100,000 files beside `git status --porcelain` on the same
//!    tree (a committed git repository): first scan (hashes everything), then a rescan of the
//!    unchanged tree (stat only) — the figure comparable with `git status`; then, with the
//!    workspace watched, the check after ten files were edited (the touched paths looked at
//!    again) beside `git status` of the same tree.
//!
//! `cargo bench -p reins-core --bench recovery [-- STEPS REPS]` (defaults 10000 steps, 5 repetitions).
//! `RECOVERY_BENCH_FILES=20000,100000` sets the tree sizes (empty: skip part 2).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/alloc.rs"]
mod alloc;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reins_core::api::{Options, Reins};
use reins_core::data_dir::DataDir;
use reins_core::engine::ResumeMode;
use reins_core::ids::RunId;
use reins_core::progress::{Observer, Progress};
use reins_core::workspace::fingerprint::{self, Fingerprint};
use reins_core::workspace::{refresh, watcher};

/// Records when the first step event arrives, and asks the engine to drain right then, so the run
/// pauses again after exactly one step.
struct FirstStep {
    at: Mutex<Option<Instant>>,
    drain: Mutex<Option<Arc<std::sync::atomic::AtomicBool>>>,
    stop_at: i64,
}

impl Observer for FirstStep {
    fn on(&self, p: &Progress) {
        if let Progress::Step { seq, .. } = p {
            let mut at = self.at.lock().unwrap();
            if at.is_none() {
                *at = Some(Instant::now());
            }
            if *seq >= self.stop_at {
                if let Some(flag) = self.drain.lock().unwrap().as_ref() {
                    flag.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

fn plan_file(dir: &Path, steps: usize) -> std::path::PathBuf {
    let mut text = String::from("name = \"long\"\ngoal = \"many small reads\"\n");
    for _ in 0..steps {
        // Terse, so that 100,000 steps fit under the plan-file limit (4 MiB).
        text.push_str("[[steps]]\ntool=\"fs.read\"\nargs={path=\"n\"}\n");
    }
    let path = dir.join(format!("plan-{steps}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Drives a fresh run until `done` steps are complete, leaving it paused.
async fn prepare(data: &DataDir, ws: &Path, plan: &Path, done: i64) -> RunId {
    let reins = Reins::open(data.clone(), Options::default()).await.unwrap();
    let id = reins
        .create_run(plan, ws, &reins_core::api::Silent)
        .await
        .unwrap();
    let obs = FirstStep {
        at: Mutex::new(None),
        drain: Mutex::new(Some(reins.drain_flag())),
        stop_at: done,
    };
    reins.drive(id, &obs).await.unwrap();
    reins.close().await;
    id
}

/// One resume from worker start to the next step; leaves the run paused again.
async fn resume_once(data: &DataDir, id: RunId, next: i64) -> Duration {
    {
        let person = Reins::open(data.clone(), Options::default()).await.unwrap();
        person.resume(id, ResumeMode::Continue).await.unwrap();
        person.close().await;
    }
    let started = Instant::now();
    let worker = Reins::open(data.clone(), Options::default()).await.unwrap();
    let obs = FirstStep {
        at: Mutex::new(None),
        drain: Mutex::new(Some(worker.drain_flag())),
        stop_at: next,
    };
    worker.drive(id, &obs).await.unwrap();
    let at = obs.at.lock().unwrap().expect("a step ran");
    worker.close().await;
    at - started
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

async fn recovery(steps: usize, reps: usize) {
    let tmp = tempfile::tempdir().unwrap();
    // RECOVERY_BENCH_DATA=DIR keeps the prepared runs there and reuses them on the next invocation
    // (for profiling the resume without preparing 100,000 steps again).
    let kept = std::env::var_os("RECOVERY_BENCH_DATA").map(std::path::PathBuf::from);
    let base = kept.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let ws = base.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("n"), "a small file\n").unwrap();
    let mut lines = Vec::new();
    for (label, done) in [("small", 10usize), ("large", steps)] {
        let data = DataDir::at(&base.join(format!("data-{label}-{done}")));
        let id_file = base.join(format!("run-{label}-{done}"));
        let t = Instant::now();
        let id = match std::fs::read_to_string(&id_file)
            .ok()
            .filter(|_| kept.is_some())
        {
            Some(id) => id.trim().parse().unwrap(),
            None => {
                let plan = plan_file(&base, done + 1_000);
                let id = prepare(&data, &ws, &plan, i64::try_from(done).unwrap()).await;
                std::fs::write(&id_file, id.to_string()).unwrap();
                id
            }
        };
        eprintln!(
            "  prepared a run with {done} completed steps in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        {
            // Where the time goes: opening (with its integrity pre-check) and verifying every
            // checkpoint (read + SHA-256).
            let t = Instant::now();
            let reins = Reins::open(data.clone(), Options::default()).await.unwrap();
            let db = std::fs::metadata(data.database())
                .map(|m| m.len())
                .unwrap_or(0);
            eprintln!(
                "  opening the data dir ({:.1} MB database) takes {}",
                db as f64 / 1e6,
                ms(t.elapsed())
            );
            let blobs = reins_core::blob::BlobStore::open(&data.blobs()).unwrap();
            let store = reins_core::store::Store::open(&data.database())
                .await
                .unwrap();
            let t = Instant::now();
            let health = reins_core::engine::stored::verify(&store, &blobs, id)
                .await
                .unwrap();
            let bytes: i64 =
                sqlx::query_scalar("SELECT SUM(size) FROM checkpoints WHERE run_id = ?")
                    .bind(id.to_string())
                    .fetch_one(store.pool())
                    .await
                    .unwrap();
            eprintln!(
                "  verifying {} checkpoints ({:.1} MB) takes {}",
                health.len(),
                bytes as f64 / 1e6,
                ms(t.elapsed())
            );
            reins.close().await;
        }
        let mut times = Vec::new();
        for r in 0..reps {
            let next = i64::try_from(done + r + 1).unwrap();
            times.push(resume_once(&data, id, next).await);
        }
        lines.push((done, times));
    }
    println!(
        "recovery: worker start → next step, median of {reps} (each: {:?})",
        lines
            .iter()
            .map(|(_, t)| t.iter().map(|d| ms(*d)).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    let small = median(lines[0].1.clone());
    let large = median(lines[1].1.clone());
    println!(
        "  run with {:>6} completed steps: {}",
        lines[0].0,
        ms(small)
    );
    println!(
        "  run with {:>6} completed steps: {}   ({:.2}× the small run; goal ≤ 100 ms)",
        lines[1].0,
        ms(large),
        large.as_secs_f64() / small.as_secs_f64()
    );
}

/// The CPU time this process has used, all its threads.
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        t.tv_sec.unsigned_abs(),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

fn tree(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(
            dir.join(format!("f{i}.txt")),
            format!("file {i}\n{}", "x".repeat(80)),
        )
        .unwrap();
    }
}

fn git(root: &Path, args: &[&str]) -> Duration {
    let t = Instant::now();
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
            "-c",
            "core.untrackedCache=false",
            // No packing in the background after the commit: it would take a core from both sides.
            "-c",
            "gc.auto=0",
            "-c",
            "maintenance.auto=false",
        ])
        .args(args)
        .current_dir(root)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    t.elapsed()
}

fn fingerprint_vs_git(files: usize, reps: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    tree(root, files);
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "tree"]);
    git(root, &["status", "--porcelain"]); // refresh the index's stat cache
    let t = Instant::now();
    let (first, stats) = fingerprint::scan(root, &Fingerprint::default()).unwrap();
    let first_time = t.elapsed();
    assert_eq!(stats.files, files, "scanned every file (.git skipped)");
    // As a later attempt sees it: the previous fingerprint is old enough to trust its times.
    let previous = Fingerprint {
        taken_at: i64::MAX,
        ..first
    };
    let mut rescans = Vec::new();
    let mut cpus = Vec::new();
    let mut gits = Vec::new();
    for _ in 0..reps {
        let (t, cpu) = (Instant::now(), cpu_time());
        let (_, s) = fingerprint::scan(root, &previous).unwrap();
        rescans.push(t.elapsed());
        cpus.push(cpu_time() - cpu);
        assert_eq!(s.hashed, 0);
        gits.push(git(root, &["status", "--porcelain"]));
    }
    let (rescan, g) = (median(rescans), median(gits));
    println!(
        "fingerprint, {files} files: first scan {} (hashes all), rescan {} (CPU {}) vs git status --porcelain {} → {:.2}× git (goal: ≤ 1.00×)",
        ms(first_time),
        ms(rescan),
        ms(median(cpus)),
        ms(g),
        rescan.as_secs_f64() / g.as_secs_f64()
    );
    // Watched: ten files edited, then the check a look makes (take the touched paths, look at
    // them, land them), against `git status --porcelain` of the same tree right after.
    let mut watcher = watcher::Watcher::start(root).unwrap();
    let mut seen = previous;
    let started = watcher.take();
    assert!(matches!(started, watcher::Touched::Paths(_)), "{started:?}");
    let (mut checks, mut gits) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        for k in 0..10 {
            let i = (rep * 7919 + k * 104_729) % files;
            let path = root.join(format!("d{:03}/f{i}.txt", i / 100));
            std::fs::write(path, format!("edit {rep} {k}\n")).unwrap();
        }
        let t = Instant::now();
        let watcher::Touched::Paths(paths) = watcher.take() else {
            panic!("the watch lost track");
        };
        let changes = refresh::refresh(root, &seen, &paths)
            .unwrap()
            .apply(&mut seen);
        checks.push(t.elapsed());
        assert_eq!(changes.len(), 10, "{changes:?}");
        gits.push(git(root, &["status", "--porcelain"]));
    }
    let (check, g) = (median(checks), median(gits));
    println!(
        "watched check, {files} files, 10 edited: {} vs git status --porcelain {} → {:.3}× git (goal: ≤ 0.10×)",
        ms(check),
        ms(g),
        check.as_secs_f64() / g.as_secs_f64()
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let steps = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let reps = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(recovery(steps, reps));
    let sizes = std::env::var("RECOVERY_BENCH_FILES").unwrap_or_else(|_| "20000,100000".into());
    for n in sizes.split(',').filter_map(|s| s.trim().parse().ok()) {
        fingerprint_vs_git(n, reps);
    }
}
