//! The random-kill loop: a supervisor starts `reins worker` processes on a stream of runs, kills
//! each with SIGKILL after a random while, restarts it, and checks the invariants after every kill:
//! no effect ran twice, every step a worker acknowledged is in the database, checkpoint and step
//! seqs have no gaps, `PRAGMA quick_check` is ok, the audit chain verifies. At the end every run
//! has finished with exactly the files its plan describes. Every fourth run has a staged command:
//! the supervisor approves its card between kills, and a worker killed while applying the staged
//! result (file by file) is settled by the next one, each file written once.
//!
//! `REINS_CHAOS_KILLS` (default 50) and `REINS_CHAOS_SEED` (default 1) set the size and the seed;
//! `scripts/chaos` runs the 1000-kill version. Needs `--features fault-injection` (the effect log).

#![cfg(feature = "fault-injection")]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead as _;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Cli;
use reins_core::api::{
    ApprovalStatus as Status, ApproveRequest, DataDir, Reins, RunId, RunState, Scope, Silent,
};

/// xorshift64*: small, seeded, good enough to pick kill times.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

/// What run number `r` must do: its plan, the files it must leave under `chaos/r{r}/`, and how
/// many effects (files written, moved or deleted) it makes.
struct Planned {
    text: String,
    expected: BTreeMap<String, String>,
    effects: usize,
}

/// Run `r`'s plan: every fourth one has a command that needs review, staged before its card (two
/// files created, one edited) between two file writes; the others twelve file steps.
fn plan(r: usize) -> Planned {
    let d = format!("chaos/r{r}");
    if r % 4 == 3 {
        let text = format!(
            r#"name = "chaos {r} (staged)"
goal = "survive a staged command"
[[steps]]
tool = "fs.write"
args = {{ path = "{d}/a.txt", content = "r{r} a1" }}
[[steps]]
tool = "shell.exec"
args = {{ command = "printf 'r{r} s1' > {d}/s1.txt && printf 'r{r} s2' > {d}/s2.txt && sed -i s/a1/a2/ {d}/a.txt" }}
[[steps]]
tool = "fs.write"
args = {{ path = "{d}/f.txt", content = "r{r} f1" }}
"#
        );
        let expected = [
            ("a.txt", "a2"),
            ("s1.txt", "s1"),
            ("s2.txt", "s2"),
            ("f.txt", "f1"),
        ]
        .into_iter()
        .map(|(f, c)| (format!("{d}/{f}"), format!("r{r} {c}")))
        .collect();
        return Planned {
            text,
            expected,
            effects: 5,
        };
    }
    let steps = [
        format!(
            r#"tool = "fs.write"
args = {{ path = "{d}/a.txt", content = "r{r} a1" }}"#
        ),
        format!(
            r#"tool = "fs.write"
args = {{ path = "{d}/b.txt", content = "r{r} b1" }}"#
        ),
        format!(
            r#"tool = "fs.write"
args = {{ path = "{d}/c.txt", content = "r{r} c1" }}"#
        ),
        format!(
            r#"tool = "fs.read"
args = {{ path = "{d}/a.txt" }}"#
        ),
        format!(
            r#"tool = "fs.edit"
args = {{ path = "{d}/a.txt", old = "a1", new = "a2" }}"#
        ),
        format!(
            r#"tool = "fs.move"
args = {{ from = "{d}/b.txt", to = "{d}/d.txt" }}"#
        ),
        format!(
            r#"tool = "fs.delete"
args = {{ path = "{d}/c.txt" }}"#
        ),
        format!(
            r#"tool = "fs.write"
args = {{ path = "{d}/e.txt", content = "r{r} e1" }}"#
        ),
        format!(
            r#"tool = "fs.edit"
args = {{ path = "{d}/d.txt", old = "b1", new = "b2" }}"#
        ),
        format!(
            r#"tool = "fs.write"
args = {{ path = "{d}/a.txt", content = "r{r} a3" }}"#
        ),
        format!(
            r#"tool = "fs.list"
args = {{ path = "{d}" }}"#
        ),
        format!(
            r#"tool = "fs.write"
args = {{ path = "{d}/f.txt", content = "r{r} f1" }}"#
        ),
    ];
    let mut text = format!("name = \"chaos {r}\"\ngoal = \"survive\"\n");
    for s in &steps {
        text.push_str(&format!("[[steps]]\n{s}\n"));
    }
    let expected = [
        ("a.txt", format!("r{r} a3")),
        ("d.txt", format!("r{r} b2")),
        ("e.txt", format!("r{r} e1")),
        ("f.txt", format!("r{r} f1")),
    ]
    .into_iter()
    .map(|(f, c)| (format!("{d}/{f}"), c))
    .collect();
    Planned {
        text,
        expected,
        effects: 10,
    }
}

/// Approves every card waiting, as a person would between kills: each bound to the hash it shows.
/// A card replaced or decided meanwhile is left to the next round. Returns how many it approved.
async fn approve_waiting(reins: &Reins) -> anyhow::Result<usize> {
    let mut approved = 0;
    for card in reins.approvals(Some(Status::Pending), None).await? {
        anyhow::ensure!(
            card.staged.is_some(),
            "only staged commands wait here, not {}: {}",
            card.subject,
            card.preview
        );
        let req = ApproveRequest {
            scope: Scope::Once,
            pattern: None,
            edited: None,
            note: None,
            expect_hash: Some(card.action_hash.clone()),
            by: "user:chaos".into(),
            leave_out: Vec::new(),
        };
        if reins.approve(&card.id, req).await.is_ok() {
            approved += 1;
        }
    }
    Ok(approved)
}

/// What one worker life printed, as it printed it.
#[derive(Default)]
struct Life {
    /// Steps it acknowledged: (run, seq) → status.
    acknowledged: Vec<(String, i64, String)>,
    /// Time from start to its first step after taking over an abandoned run.
    recovery: Option<Duration>,
    adopted: usize,
}

fn spawn_worker(cli: &Cli, effects: &std::path::Path) -> anyhow::Result<(Child, Arc<Mutex<Life>>)> {
    let started = Instant::now();
    let mut child = cli
        .cmd()
        .args(["--json", "worker", "--poll-ms", "20"])
        .env("REINS_EFFECT_LOG", effects)
        .env("REINS_RETRY_MAX", "1000000")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let life = Arc::new(Mutex::new(Life::default()));
    let out = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let shared = Arc::clone(&life);
    std::thread::spawn(move || {
        let mut run = String::new();
        let mut adopting = false;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let Ok(mut life) = shared.lock() else { return };
            match event["event"].as_str() {
                Some("attempt") => {
                    run = event["run"].as_str().unwrap_or("").to_owned();
                    adopting = event["adopted"].as_bool().unwrap_or(false);
                    if adopting {
                        life.adopted += 1;
                    }
                }
                Some("step") => {
                    if adopting && life.recovery.is_none() {
                        life.recovery = Some(started.elapsed());
                    }
                    life.acknowledged.push((
                        run.clone(),
                        event["seq"].as_i64().unwrap_or(0),
                        event["status"].as_str().unwrap_or("").to_owned(),
                    ));
                }
                _ => {}
            }
        }
    });
    Ok((child, life))
}

async fn check_invariants(
    reins: &Reins,
    effects: &std::path::Path,
    life: &Life,
) -> anyhow::Result<usize> {
    let pool = reins_tests::raw_db(reins).await?;
    let pool = &pool;
    // SQLite's own page check; PostgreSQL checks its pages as it reads them.
    if reins_tests::on_postgres() {
        anyhow::ensure!(
            reins.doctor().await?.integrity == ["ok"],
            "a table does not read"
        );
    } else {
        let quick: Vec<String> = sqlx::query_scalar("PRAGMA quick_check")
            .fetch_all(pool)
            .await?;
        anyhow::ensure!(quick == ["ok"], "quick_check: {quick:?}");
    }
    let verified = reins.audit_verify().await?;
    anyhow::ensure!(
        verified.intact,
        "the audit chain breaks: {:?}",
        verified.damage
    );
    for (run, seq, status) in &life.acknowledged {
        let stored: Option<String> =
            sqlx::query_scalar("SELECT status FROM steps WHERE run_id = $1 AND seq = $2")
                .bind(run)
                .bind(seq)
                .fetch_optional(pool)
                .await?;
        anyhow::ensure!(
            stored.as_deref() == Some(status.as_str()),
            "run {run} step {seq} was acknowledged as {status} but the database has {stored:?}"
        );
    }
    let gaps: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM (SELECT run_id FROM checkpoints GROUP BY run_id HAVING MAX(seq) <> COUNT(*)
                         UNION ALL SELECT run_id FROM steps GROUP BY run_id HAVING MAX(seq) <> COUNT(*)) AS gaps",
    )
    .fetch_one(pool)
    .await?;
    anyhow::ensure!(gaps == 0, "{gaps} runs have seq gaps");
    let log = std::fs::read_to_string(effects).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    let unique: BTreeSet<&str> = lines.iter().copied().collect();
    Ok(lines.len() - unique.len())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_kills_never_repeat_an_effect_or_lose_a_step() -> anyhow::Result<()> {
    let kills_wanted: usize = std::env::var("REINS_CHAOS_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let seed: u64 = std::env::var("REINS_CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut rng = Rng(seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let reins = Reins::open(DataDir::at(&cli.data()), cli.options()).await?;
    let mut runs: Vec<(RunId, Planned)> = Vec::new();
    let (mut kills, mut recoveries, mut duplicates, mut approved) =
        (0usize, 0usize, 0usize, 0usize);
    let mut recovery_times = Vec::new();
    let started = Instant::now();

    while kills < kills_wanted {
        // Keep a few runs unfinished so there is always work to be killed in.
        let open = reins
            .runs()
            .await?
            .iter()
            .filter(|r| !r.state.is_terminal())
            .count();
        for _ in open..4 {
            let planned = plan(runs.len());
            let file = cli.tmp.path().join(format!("plan-{}.toml", runs.len()));
            std::fs::write(&file, &planned.text)?;
            let id = reins.create_run(&file, &cli.ws(), &Silent).await?;
            runs.push((id, planned));
        }
        approved += approve_waiting(&reins).await?;
        let (mut child, life) = spawn_worker(&cli, &effects)?;
        std::thread::sleep(Duration::from_millis(rng.between(30, 300)));
        child.kill()?;
        child.wait()?;
        kills += 1;
        // Let the reader thread drain what the worker printed before it died.
        std::thread::sleep(Duration::from_millis(5));
        let life = std::mem::take(&mut *life.lock().map_err(|_| anyhow::anyhow!("poisoned"))?);
        recoveries += life.adopted;
        recovery_times.extend(life.recovery);
        duplicates = check_invariants(&reins, &effects, &life).await?;
        anyhow::ensure!(duplicates == 0, "an effect ran twice after kill {kills}");
        if kills % 100 == 0 {
            println!(
                "  … {kills}/{kills_wanted} kills, {recoveries} recoveries, {} runs, 0 duplicates so far ({:.0} s)",
                runs.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }

    // Let a last worker finish everything (approving the staged cards it stops at), then check
    // every run's files.
    for _ in 0..4 {
        approved += approve_waiting(&reins).await?;
        let out = cli
            .cmd()
            .args(["worker", "--once"])
            .env("REINS_EFFECT_LOG", &effects)
            .env("REINS_RETRY_MAX", "1000000")
            .output()?;
        anyhow::ensure!(out.status.success(), "{}", common::text(&out));
        if reins
            .approvals(Some(Status::Pending), None)
            .await?
            .is_empty()
        {
            break;
        }
    }
    duplicates = duplicates.max(check_invariants(&reins, &effects, &Life::default()).await?);
    let verified = reins.audit_verify().await?;
    anyhow::ensure!(
        verified.intact,
        "the whole audit chain verifies at the end: {:?}",
        verified.damage
    );
    let mut steps_total = 0;
    for (id, Planned { expected, .. }) in &runs {
        let detail = reins.run_detail(*id).await?;
        anyhow::ensure!(
            detail.run.state == RunState::Succeeded,
            "run {id} ended {}: {:?}",
            detail.run.state,
            detail.run.last_error
        );
        steps_total += detail.steps.len();
        for (path, content) in expected {
            anyhow::ensure!(cli.read(path)? == *content, "{path} has the wrong content");
        }
        for gone in ["b.txt", "c.txt"] {
            let dir = expected
                .keys()
                .next()
                .and_then(|p| p.rsplit_once('/'))
                .map_or("", |(d, _)| d);
            anyhow::ensure!(
                !cli.ws().join(dir).join(gone).exists(),
                "{dir}/{gone} exists"
            );
        }
    }
    let effects_run = std::fs::read_to_string(&effects)?.lines().count();
    let effects_planned: usize = runs.iter().map(|(_, p)| p.effects).sum();
    // Each effect appends its log line right after it happened, so a kill between the two can cut
    // a line (the files above prove the effect itself); more lines than effects would be a repeat.
    anyhow::ensure!(
        effects_run <= effects_planned && effects_run + kills >= effects_planned,
        "{effects_run} effects logged for {} runs, which make {effects_planned}",
        runs.len()
    );
    let staged = runs.iter().filter(|(_, p)| p.effects == 5).count();
    recovery_times.sort();
    let elapsed = started.elapsed();
    println!(
        "chaos: {kills} kills, {recoveries} recoveries (abandoned runs taken over), {duplicates} duplicate effects, \
         {} runs finished ({staged} with a staged command, {approved} cards approved), {steps_total} steps, {effects_run} effects, recovery to next step p50 {:?} p99 {:?} \
         (n={}), {:.1} steps/s over {:.1} s",
        runs.len(),
        percentile(&recovery_times, 0.5),
        percentile(&recovery_times, 0.99),
        recovery_times.len(),
        steps_total as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    anyhow::ensure!(duplicates == 0, "duplicates");
    anyhow::ensure!(steps_total > 0 && recoveries > 0, "no progress");
    anyhow::ensure!(
        staged > 0 && approved >= staged,
        "no staged command was carried out"
    );
    Ok(())
}
