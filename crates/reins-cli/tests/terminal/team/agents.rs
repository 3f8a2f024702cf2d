//! Red team N6: a run queued on a shared database names its agent; the worker that carries it out
//! starts only what its own machine registered under that name, never a command line from the
//! database, and takes a run that names no machine only when told to.

use super::{ok, Team};

/// What the agent run `id` started on `machine` wrote to its stderr log there.
fn agent_log(team: &Team, machine: &str, id: &str) -> String {
    std::fs::read_to_string(team.data(machine).join(format!("agent-logs/{id}.log")))
        .unwrap_or_default()
}

/// Queues an ACP run on alpha, in the shared workspace, and returns its id.
fn queue(team: &Team, agent: &str) -> anyhow::Result<String> {
    let out = team
        .on("alpha")
        .args([
            "--json", "run", "--acp", "tidy", "--queue", "--agent", agent,
        ])
        .arg("--workspace")
        .arg(team.ws())
        .output()?;
    let text = ok(&out)?;
    let created: serde_json::Value = serde_json::from_str(text.lines().next().unwrap_or_default())?;
    anyhow::ensure!(created["event"] == "created", "{text}");
    Ok(created["run"].as_str().unwrap_or_default().to_owned())
}

/// Run `id` as alpha's `reins ps` shows it.
fn run(team: &Team, id: &str) -> anyhow::Result<serde_json::Value> {
    let runs = team.json("alpha", &["ps"])?;
    Ok(runs
        .as_array()
        .and_then(|all| all.iter().find(|r| r["id"] == id))
        .cloned()
        .unwrap_or_default())
}

/// Why run `id` stopped.
fn reason(team: &Team, id: &str) -> anyhow::Result<String> {
    Ok(run(team, id)?["lastError"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_starts_only_the_agents_its_own_machine_registered() -> anyhow::Result<()> {
    let team = Team::new()?;
    std::fs::create_dir_all(team.ws())?;
    let root = team.ws().to_string_lossy().into_owned();
    let buildbox = |args: &[&str]| -> anyhow::Result<String> {
        ok(&team
            .on("buildbox")
            .args(["worker", "--once", "--workspace-root", &root])
            .args(args)
            .output()?)
    };

    // The finding as written: a command line stored in the database.
    let raw = queue(&team, "sh -c 'echo ran-the-databases-command >&2'")?;
    buildbox(&[])?;
    let shown = run(&team, &raw)?;
    assert_eq!(shown["state"], "suspended", "{shown}");
    let why = reason(&team, &raw)?;
    assert!(
        why.contains("started on alpha, and buildbox will not start it")
            && why.contains("only by a command line"),
        "{why}"
    );
    assert!(!agent_log(&team, "buildbox", &raw).contains("ran-the-databases-command"));

    // A name alpha registered and buildbox did not.
    let helper = ["agents", "add", "helper", "--", "sh", "-c"];
    ok(&team
        .on("alpha")
        .args(helper)
        .arg("echo alphas-helper >&2")
        .output()?)?;
    let named = queue(&team, "helper")?;
    buildbox(&[])?;
    let why = reason(&team, &named)?;
    assert!(
        why.contains("\"helper\" is not registered on this machine"),
        "{why}"
    );
    assert!(agent_log(&team, "buildbox", &named).is_empty());

    // Registered on buildbox: buildbox's own program runs, never alpha's.
    ok(&team
        .on("buildbox")
        .args(helper)
        .arg("echo buildboxs-helper >&2")
        .output()?)?;
    let mine = queue(&team, "helper")?;
    buildbox(&[])?;
    let log = agent_log(&team, "buildbox", &mine);
    assert!(
        log.contains("buildboxs-helper") && !log.contains("alphas-helper"),
        "{log}"
    );

    // A run whose machine was emptied by hand is nobody's, unless the worker adopts such runs;
    // then it is still a run from elsewhere.
    let orphan = queue(&team, "sh -c 'echo ran-the-orphans-command >&2'")?;
    let db = reins_tests::raw_db(&team.reins("alpha").await?).await?;
    sqlx::query("UPDATE runs SET machine = NULL WHERE id = $1")
        .bind(&orphan)
        .execute(&db)
        .await?;
    let left = buildbox(&[])?;
    assert!(left.contains("drove 0 run(s)"), "{left}");
    buildbox(&["--adopt-legacy"])?;
    let why = reason(&team, &orphan)?;
    assert!(
        why.contains("started on a machine nobody recorded"),
        "{why}"
    );
    assert!(!agent_log(&team, "buildbox", &orphan).contains("ran-the-orphans-command"));
    Ok(())
}
