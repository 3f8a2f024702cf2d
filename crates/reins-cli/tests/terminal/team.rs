//! Team mode: "machines" simulated as `reins` processes with their own data dirs and host names
//! (`REINS_HOST`), sharing one database on the throwaway PostgreSQL cluster.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use reins_core::api::{DataDir, Options, Reins, RunState, Silent};

/// One shared database and a workspace every machine of the test can reach at the same path.
struct Team {
    tmp: tempfile::TempDir,
    url: String,
}

impl Team {
    fn new() -> anyhow::Result<Self> {
        let sb = reins_tests::Sandbox::new()?;
        let cluster = reins_testpg::Cluster::shared().map_err(|e| anyhow::anyhow!("{e}"))?;
        let url = cluster
            .database("team")
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Self { tmp: sb.tmp, url })
    }

    fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    fn data(&self, machine: &str) -> PathBuf {
        self.tmp.path().join(format!("data-{machine}"))
    }

    /// `reins` as run on `machine`: its own data dir and host name, the shared database, the
    /// built-in policy (every change is reviewed).
    fn on(&self, machine: &str) -> Command {
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

    fn json(&self, machine: &str, args: &[&str]) -> anyhow::Result<serde_json::Value> {
        let out = self.on(machine).args(args).arg("--json").output()?;
        anyhow::ensure!(
            out.status.success(),
            "reins {args:?}: {}",
            common::text(&out)
        );
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// The facade on `machine`'s data dir and the shared database.
    async fn reins(&self, machine: &str) -> anyhow::Result<Reins> {
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

fn ok(out: &Output) -> anyhow::Result<String> {
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
        ids.push(queue.create_plan_run(&plan, &team.ws(), &Silent).await?);
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

    let cluster = reins_testpg::Cluster::shared().map_err(|e| anyhow::anyhow!("{e}"))?;
    let db = team.url.rsplit('/').next().unwrap_or_default().to_owned();
    cluster
        .sql(
            &db,
            "DELETE FROM audit_events WHERE seq > (SELECT MAX(seq) - 3 FROM audit_events)",
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;

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
