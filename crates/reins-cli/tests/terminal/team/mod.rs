//! Team mode: "machines" simulated as `reins` processes with their own data dirs and host names
//! (`REINS_HOST`), sharing one database on the throwaway PostgreSQL cluster.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use reins_core::api::{DataDir, Options, Reins, RunState, Silent};

mod agents;

/// One shared database and a workspace every machine of the test can reach at the same path.
pub(crate) struct Team {
    tmp: tempfile::TempDir,
    url: String,
}

impl Team {
    /// A team on a database of its own on the shared cluster.
    pub(crate) fn new() -> anyhow::Result<Self> {
        Self::on_database(reins_testpg::database("team")?)
    }

    fn on_database(url: String) -> anyhow::Result<Self> {
        Ok(Self {
            tmp: reins_tests::Sandbox::new()?.tmp,
            url,
        })
    }

    /// Where the workers of a takeover story log each effect they run.
    fn effects(&self) -> PathBuf {
        self.tmp.path().join("effects.log")
    }

    /// The facade on alpha, and a queued run of `WRITES` writes.
    async fn queued_writes(&self) -> anyhow::Result<(Reins, reins_core::api::RunId)> {
        let queue = self.reins("alpha").await?;
        let plan = reins_tests::plan(&many_writes(WRITES))?;
        let run = queue.create_run(&plan, &self.ws(), &Silent).await?;
        Ok((queue, run))
    }

    /// Every file of the writes plan, with its content.
    fn all_written(&self) -> anyhow::Result<()> {
        for i in 0..WRITES {
            let path = self.ws().join(format!("many/f{i}.txt"));
            anyhow::ensure!(
                std::fs::read_to_string(&path)? == format!("f{i}"),
                "{}",
                path.display()
            );
        }
        Ok(())
    }

    pub(crate) fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    pub(crate) fn data(&self, machine: &str) -> PathBuf {
        self.tmp.path().join(format!("data-{machine}"))
    }

    /// `reins` as run on `machine`: its own data dir and host name, the shared database, the
    /// built-in policy (every change is reviewed).
    pub(crate) fn on(&self, machine: &str) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_reins"));
        c.env("REINS_DATA_DIR", self.data(machine))
            .env(
                "REINS_CONFIG_DIR",
                self.tmp.path().join(format!("config-{machine}")),
            )
            .env("REINS_HOST", machine)
            .env("REINS_DATABASE_URL", &self.url)
            .env_remove("REINS_POLICY")
            .env_remove("REINS_FAULT")
            .env_remove("REINS_LEASE_SECS");
        c
    }

    /// `reins` on `machine` with a policy that lets file changes run without review.
    fn allowing(&self, machine: &str) -> Command {
        let mut c = self.on(machine);
        c.env(
            "REINS_POLICY",
            common::repo_root().join("tests/fixtures/allow-file-changes.toml"),
        );
        c
    }

    pub(crate) fn json(&self, machine: &str, args: &[&str]) -> anyhow::Result<serde_json::Value> {
        let out = self.on(machine).args(args).arg("--json").output()?;
        anyhow::ensure!(
            out.status.success(),
            "reins {args:?}: {}",
            common::text(&out)
        );
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// The facade on `machine`'s data dir and the shared database.
    pub(crate) async fn reins(&self, machine: &str) -> anyhow::Result<Reins> {
        Ok(Reins::open(
            DataDir::at(&self.data(machine)),
            Options {
                database: Some(self.url.clone()),
                ..reins_tests::options()
            },
        )
        .await?)
    }
}

pub(crate) fn ok(out: &Output) -> anyhow::Result<String> {
    let text = common::text(out);
    anyhow::ensure!(out.status.success(), "{text}");
    Ok(text)
}

fn pending(team: &Team, machine: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    Ok(team
        .json(machine, &["approvals"])?
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// (a) A worker runs a plan, a reviewer on another machine approves from the card alone, and the
/// worker that can reach the workspace carries the write out; a worker that cannot, does not.
#[test]
fn a_reviewer_elsewhere_approves_and_only_a_worker_that_reaches_the_workspace_carries_it_out(
) -> anyhow::Result<()> {
    let team = Team::new()?;
    let plan = common::Cli::plan("tidy-configs.toml");
    let out = team
        .on("alpha")
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(team.ws())
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", common::text(&out));

    // The reviewer's machine has never seen the workspace: the card holds what it needs.
    let cards = pending(&team, "beta")?;
    assert_eq!(cards.len(), 1, "{cards:?}");
    let id = cards[0]["id"].as_str().unwrap_or_default().to_owned();
    let card = team.json("beta", &["approval", "show", &id])?;
    assert!(
        card.to_string().contains("nginx.conf.bak"),
        "the card shows the move: {card}"
    );
    ok(&team.on("beta").args(["approve", &id]).output()?)?;

    // A worker on a third machine, reaching no workspace of alpha's, leaves the run alone.
    let gamma = ok(&team.on("gamma").args(["worker", "--once"]).output()?)?;
    assert!(gamma.contains("drove 0 run(s)"), "{gamma}");
    assert!(team.ws().join("config/nginx.conf.bak").exists());

    // Alpha carries it out.
    ok(&team.on("alpha").args(["worker", "--once"]).output()?)?;
    assert!(team.ws().join("archive/nginx.conf.bak").exists());
    assert!(!team.ws().join("config/nginx.conf.bak").exists());

    // Who decided, and where.
    let decided = team.json("alpha", &["approval", "show", &id])?;
    let by = decided["decidedBy"].as_str().unwrap_or_default().to_owned();
    assert!(
        by.ends_with("@beta"),
        "the decision names the reviewer's machine: {by}"
    );
    let runs = team.json("beta", &["ps"])?;
    assert_eq!(runs[0]["machine"], "alpha", "{runs}");
    Ok(())
}

/// (d) Eight workers on eight machines race over 200 queued runs: no run is claimed twice, and
/// every run finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_workers_share_two_hundred_runs_without_claiming_one_twice() -> anyhow::Result<()> {
    let team = Team::new()?;
    let queue = team.reins("queue").await?;
    let mut ids = Vec::new();
    for i in 0..200 {
        let plan = reins_tests::plan(&format!(
            "name = \"r{i}\"\ngoal = \"one file\"\n[[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"race/r{i}.txt\", content = \"r{i}\" }}\n"
        ))?;
        ids.push(queue.create_run(&plan, &team.ws(), &Silent).await?);
    }
    let root = team.ws();
    let workers: Vec<_> = (1..=8)
        .map(|w| {
            team.allowing(&format!("w{w}"))
                .args(["worker", "--once", "--poll-ms", "50", "--workspace-root"])
                .arg(&root)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    for w in workers {
        let out = w.wait_with_output()?;
        ok(&out)?;
    }
    for (i, id) in ids.iter().enumerate() {
        let detail = queue.run_detail(*id).await?;
        assert_eq!(
            detail.run.state,
            RunState::Succeeded,
            "run {i}: {:?}",
            detail.run.last_error
        );
        assert_eq!(
            std::fs::read_to_string(root.join(format!("race/r{i}.txt")))?,
            format!("r{i}")
        );
    }
    let db = reins_tests::raw_db(&queue).await?;
    let twice: Vec<(String, i64)> =
        sqlx::query_as("SELECT run_id, COUNT(*) FROM attempts GROUP BY run_id HAVING COUNT(*) > 1")
            .fetch_all(&db)
            .await?;
    assert!(twice.is_empty(), "runs claimed more than once: {twice:?}");
    let owners: Vec<(String,)> = sqlx::query_as("SELECT DISTINCT worker FROM attempts")
        .fetch_all(&db)
        .await?;
    assert!(owners.len() > 1, "the work was shared: {owners:?}");
    let verified = queue.audit_verify().await?;
    assert!(verified.intact, "{:?}", verified.damage);
    Ok(())
}

/// (f) The database's chain cut back below a head a machine saw is caught by `reins audit
/// verify` on that machine; a machine that joins afterwards vouches only for what it finds.
#[test]
fn a_truncated_shared_chain_is_caught_by_a_machine_that_saw_a_later_head() -> anyhow::Result<()> {
    let team = Team::new()?;
    let plan = common::Cli::plan("tidy-configs.toml");
    let out = team
        .allowing("alpha")
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(team.ws())
        .output()?;
    ok(&out)?;
    let before = ok(&team.on("alpha").args(["audit", "verify"]).output()?)?;
    assert!(
        before.contains("intact") || before.contains("ok"),
        "{before}"
    );
    ok(&team.on("beta").args(["audit", "verify"]).output()?)?;

    let db = team.url.rsplit('/').next().unwrap_or_default().to_owned();
    reins_testpg::Cluster::shared()?.sql(
        &db,
        "DELETE FROM audit_events WHERE seq > (SELECT MAX(seq) - 3 FROM audit_events)",
    )?;

    for machine in ["alpha", "beta"] {
        let out = team.on(machine).args(["audit", "verify"]).output()?;
        assert!(
            !out.status.success(),
            "{machine} saw the later head: {}",
            common::text(&out)
        );
    }
    let newcomer = team.on("delta").args(["audit", "verify"]).output()?;
    assert!(newcomer.status.success(), "{}", common::text(&newcomer));
    Ok(())
}

/// The anchor of a machine lives in its own data dir, never in the shared database.
#[test]
fn each_machine_keeps_its_own_head_anchor() -> anyhow::Result<()> {
    let team = Team::new()?;
    ok(&team.on("alpha").args(["ps"]).output()?)?;
    let anchors = |machine: &str| -> anyhow::Result<Vec<PathBuf>> {
        Ok(std::fs::read_dir(team.data(machine))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".audit-head"))
            .collect())
    };
    assert!(
        anchors("alpha")?.is_empty(),
        "an empty chain needs no anchor yet"
    );
    let plan = common::Cli::plan("tidy-configs.toml");
    ok(&team
        .allowing("alpha")
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(team.ws())
        .output()?)?;
    let found = anchors("alpha")?;
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        !Path::new(&team.data("alpha")).join("reins.db").exists(),
        "no SQLite file in team mode"
    );
    Ok(())
}

/// Writes in the plans the takeover stories run: enough that a worker is caught half-way.
const WRITES: usize = 300;

/// A plan of `n` writes, each to its own file, slow enough to be caught in the middle.
fn many_writes(n: usize) -> String {
    let mut plan = String::from("name = \"many\"\ngoal = \"files\"\n");
    for i in 0..n {
        plan.push_str(&format!(
            "[[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"many/f{i}.txt\", content = \"f{i}\" }}\n"
        ));
    }
    plan
}

/// Waits until `run` has at least `steps` steps, or fails after 30 s.
async fn until_steps(
    reins: &Reins,
    run: reins_core::api::RunId,
    steps: usize,
) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while reins.run_detail(run).await?.steps.len() < steps {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the run did not get going"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    Ok(())
}

/// The effects an effect log holds more than once.
fn repeated(log: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    Ok(text
        .lines()
        .filter(|l| !seen.insert(*l))
        .map(str::to_owned)
        .collect())
}

#[cfg(feature = "fault-injection")]
fn worker(team: &Team, machine: &str, lease_secs: &str, effects: &Path) -> Command {
    let mut c = team.allowing(machine);
    c.env("REINS_EFFECT_LOG", effects)
        .args([
            "worker",
            "--poll-ms",
            "50",
            "--lease-secs",
            lease_secs,
            "--workspace-root",
        ])
        .arg(team.ws());
    c
}

/// (b) A worker is killed with SIGKILL while it holds a run. A worker on another machine declaring
/// the same workspace root cannot tell a process elsewhere is gone, so it waits the lease out, then
/// takes the run over: every file right, no effect twice.
#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_on_another_machine_is_waited_out_by_its_lease_then_taken_over(
) -> anyhow::Result<()> {
    let team = Team::new()?;
    let effects = team.effects();
    let (queue, run) = team.queued_writes().await?;
    let mut alpha = worker(&team, "alpha", "4", &effects)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    until_steps(&queue, run, 5).await?;
    alpha.kill()?;
    alpha.wait()?;
    let killed_at = std::time::Instant::now();

    // At once: the lease still holds, and a pid on another host proves nothing.
    let early = worker(&team, "gamma", "4", &effects)
        .arg("--once")
        .output()?;
    let early = ok(&early)?;
    assert!(early.contains("drove 0 run(s)"), "{early}");
    let held = queue.run_detail(run).await?;
    assert_eq!(
        held.attempts.len(),
        1,
        "nobody took the run while its lease held"
    );

    std::thread::sleep(std::time::Duration::from_secs(4).saturating_sub(killed_at.elapsed()));
    std::thread::sleep(std::time::Duration::from_millis(300));
    ok(&worker(&team, "gamma", "4", &effects)
        .arg("--once")
        .output()?)?;
    let done = queue.run_detail(run).await?;
    assert_eq!(
        done.run.state,
        RunState::Succeeded,
        "{:?}",
        done.run.last_error
    );
    assert!(done.attempts.len() >= 2, "{:?}", done.attempts);
    assert!(
        done.attempts
            .last()
            .is_some_and(|a| a.worker.starts_with("gamma:")),
        "{:?}",
        done.attempts
    );
    team.all_written()?;
    assert_eq!(
        repeated(&effects)?,
        Vec::<String>::new(),
        "no effect ran twice"
    );
    Ok(())
}

/// (c) A holder frozen with SIGSTOP past its lease is taken over; when it wakes it is fenced out:
/// the database accepts nothing more from it, and the run ends as its new holder drives it.
#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_holder_wakes_fenced_out() -> anyhow::Result<()> {
    use rustix::process::Signal;
    let team = Team::new()?;
    let effects = team.effects();
    let (queue, run) = team.queued_writes().await?;
    let mut alpha = worker(&team, "alpha", "2", &effects)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    until_steps(&queue, run, 5).await?;
    common::signal(&alpha, Signal::STOP)?;
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    ok(&worker(&team, "gamma", "30", &effects)
        .arg("--once")
        .output()?)?;
    let done = queue.run_detail(run).await?;
    assert_eq!(
        done.run.state,
        RunState::Succeeded,
        "{:?}",
        done.run.last_error
    );
    let (steps, fence) = (done.steps.len(), done.run.fence);

    common::signal(&alpha, Signal::CONT)?;
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    alpha.kill()?;
    alpha.wait()?;
    let after = queue.run_detail(run).await?;
    assert_eq!(after.run.state, RunState::Succeeded);
    assert_eq!(
        after.steps.len(),
        steps,
        "no step was written by the stale holder"
    );
    assert_eq!(after.run.fence, fence, "the stale holder took nothing back");
    let verified = queue.audit_verify().await?;
    assert!(verified.intact, "{:?}", verified.damage);
    team.all_written()?;
    Ok(())
}

/// (e) PostgreSQL restarts (`pg_ctl restart -m immediate`) in the middle of a run: the worker
/// connects again, no step it acknowledged is lost, no effect runs twice, and the run finishes.
#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_mid_run_loses_no_acknowledged_step_and_repeats_no_effect(
) -> anyhow::Result<()> {
    use std::io::BufRead as _;
    let own = reins_testpg::Cluster::private()?;
    let team = Team::on_database(own.database("restart")?)?;
    let effects = team.effects();
    let (queue, run) = team.queued_writes().await?;
    queue.close().await;
    let mut alpha = worker(&team, "alpha", "3", &effects)
        .arg("--json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let out = alpha
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    // Each step the worker acknowledged (seq, status), and `None` when it says the run finished.
    let (tell, told) = std::sync::mpsc::channel::<Option<(i64, String)>>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let told = match event["event"].as_str() {
                Some("step") => Some((
                    event["seq"].as_i64().unwrap_or(0),
                    event["status"].as_str().unwrap_or_default().to_owned(),
                )),
                Some("finished") => None,
                _ => continue,
            };
            if tell.send(told).is_err() {
                return;
            }
        }
    });
    let mut acknowledged = Vec::new();
    while acknowledged.len() < 20 {
        if let Some(step) = told.recv_timeout(std::time::Duration::from_secs(30))? {
            acknowledged.push(step);
        }
    }
    own.restart_immediate()?;
    // The run finishes under the same worker, however long the restart kept it waiting. A step
    // whose settling committed as the server went down is never acknowledged (the worker heard
    // an error; the next attempt resumes after it): so wait for the end of the run, not for a
    // count of steps.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match told.recv_timeout(left) {
            Ok(Some(step)) => acknowledged.push(step),
            Ok(None) => break,
            Err(_) => anyhow::bail!(
                "the run did not finish after the restart ({} of {WRITES} steps acknowledged)",
                acknowledged.len()
            ),
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    alpha.kill()?;
    alpha.wait()?;

    let reins = team.reins("alpha").await?;
    let detail = reins.run_detail(run).await?;
    assert_eq!(
        detail.run.state,
        RunState::Succeeded,
        "{:?}",
        detail.run.last_error
    );
    assert_eq!(
        detail
            .steps
            .iter()
            .filter(|s| s.status.to_string() == "done")
            .count(),
        WRITES,
        "every write is a step done, once"
    );
    for (seq, status) in &acknowledged {
        let stored = detail.steps.iter().find(|s| s.seq == *seq);
        assert_eq!(
            stored.map(|s| s.status.to_string()).as_deref(),
            Some(status.as_str()),
            "acknowledged step {seq} ({status})"
        );
    }
    assert_eq!(
        repeated(&effects)?,
        Vec::<String>::new(),
        "no effect ran twice"
    );
    team.all_written()?;
    let verified = reins.audit_verify().await?;
    assert!(verified.intact, "{:?}", verified.damage);
    Ok(())
}
