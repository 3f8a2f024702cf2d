//! The `reins` binary as a user meets it: an example plan end to end, rollback and its undo, exit
//! codes, and clear refusals.

use crate::common;

use common::{text, Cli};

#[test]
fn fix_logrotate_end_to_end() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let out = cli.run_plan("fix-logrotate.toml")?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed = text(&out);
    assert!(
        printed.contains("#4 fs.edit") && printed.contains("succeeded"),
        "{printed}"
    );
    assert!(
        printed.contains("why: rotate daily and keep 7 files"),
        "the agent's reason is shown: {printed}"
    );

    let conf = cli.read("config/logrotate.conf")?;
    assert!(
        conf.contains("    daily\n    rotate 7\n") && !conf.contains("rotate = never"),
        "{conf}"
    );
    assert!(cli
        .read("docs/incidents/2026-11-28-disk-full.md")?
        .contains("log rotation was disabled"));

    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded");
    let steps = show["steps"].as_array().cloned().unwrap_or_default();
    let tools: Vec<&str> = steps.iter().filter_map(|s| s["tool"].as_str()).collect();
    assert_eq!(
        tools,
        ["fs.read", "fs.search", "fs.read", "fs.edit", "fs.write"]
    );
    assert!(steps.iter().all(|s| s["status"] == "done"));
    let cps = show["checkpoints"].as_array().cloned().unwrap_or_default();
    let seqs: Vec<i64> = cps.iter().filter_map(|c| c["seq"].as_i64()).collect();
    assert_eq!(
        seqs,
        [1, 2, 3, 4, 5, 6, 7],
        "created + one per step + finished, contiguous"
    );
    assert!(cps.iter().all(|c| c["status"] == "ok"));
    assert_eq!(show["recovery"]["point"], 7);
    let intents = show["intents"].as_array().cloned().unwrap_or_default();
    assert_eq!(intents.len(), 2, "two effects, two intents");
    assert!(intents.iter().all(|i| i["status"] == "confirmed"));

    let human = text(&cli.run(&["show", &id])?);
    assert!(
        human.contains("why: rotate daily and keep 7 files"),
        "show gives each step's reason: {human}"
    );

    let doctor = cli.run(&["doctor"])?;
    assert_eq!(doctor.status.code(), Some(0), "{}", text(&doctor));
    Ok(())
}

#[test]
fn rollback_restores_and_can_be_undone() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let original_runbook = cli.read("docs/RUNBOOK.md")?;
    let out = cli.run_plan("tidy-configs.toml")?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let after_runbook = cli.read("docs/RUNBOOK.md")?;
    assert!(!cli.ws().join("tmp/render-cache.tmp").exists());
    let id = cli.only_run()?;
    let prefix = &id[..13];

    let dry = cli.run(&["rollback", prefix, "--to", "1", "--dry-run"])?;
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry));
    assert!(
        text(&dry).contains("+cache entry 1"),
        "the dry run shows the diff: {}",
        text(&dry)
    );
    assert_eq!(
        cli.read("docs/RUNBOOK.md")?,
        after_runbook,
        "a dry run changes nothing"
    );

    let back = cli.json(&["rollback", prefix, "--to", "1"])?;
    assert_eq!(back["changes"].as_array().map(Vec::len), Some(4), "{back}");
    assert_eq!(cli.read("docs/RUNBOOK.md")?, original_runbook);
    assert_eq!(
        cli.read("tmp/render-cache.tmp")?,
        "cache entry 1\ncache entry 2\n"
    );
    assert!(
        cli.ws().join("config/nginx.conf.bak").exists()
            && !cli.ws().join("archive/nginx.conf.bak").exists()
    );

    let snapshot = back["snapshot"].as_i64().unwrap_or_default().to_string();
    let undo = cli.run(&["rollback", prefix, "--to", &snapshot])?;
    assert_eq!(undo.status.code(), Some(0), "{}", text(&undo));
    assert_eq!(
        cli.read("docs/RUNBOOK.md")?,
        after_runbook,
        "undo brings back the run's result"
    );
    assert!(!cli.ws().join("tmp/render-cache.tmp").exists());
    assert!(cli.ws().join("archive/nginx.conf.bak").exists());
    Ok(())
}

#[test]
fn exit_codes() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let failed = cli.run_plan("guarded-edit.toml")?;
    assert_eq!(
        failed.status.code(),
        Some(1),
        "a failed run exits 1: {}",
        text(&failed)
    );
    assert!(
        text(&failed).contains("does not occur in config/nginx.conf"),
        "{}",
        text(&failed)
    );

    let missing_plan = cli.run(&["run", "--plan", "/nonexistent.toml", "--workspace", "."])?;
    assert_eq!(
        missing_plan.status.code(),
        Some(2),
        "{}",
        text(&missing_plan)
    );
    assert!(text(&missing_plan).contains("the plan /nonexistent.toml does not exist"));

    let bad_ws = cli
        .cmd()
        .args(["run", "--plan"])
        .arg(Cli::plan("tidy-configs.toml"))
        .args(["--workspace", "/nonexistent-ws"])
        .output()?;
    assert_eq!(bad_ws.status.code(), Some(2), "{}", text(&bad_ws));

    let unknown = cli.run(&["show", "ffffffff"])?;
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    let usage = cli.run(&["rollback"])?;
    assert_eq!(usage.status.code(), Some(2));
    Ok(())
}

#[test]
fn a_broken_plan_is_refused_with_its_line() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let plan = cli.tmp.path().join("bad.toml");
    std::fs::write(
        &plan,
        "name = \"x\"\ngoal = \"y\"\n[[steps]]\ntool = \"fs.read\"\nargs = { path = }\n",
    )?;
    let out = cli
        .cmd()
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("line 5"), "{}", text(&out));
    Ok(())
}

#[test]
fn a_foreign_database_file_is_named_and_left_alone() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    std::fs::create_dir_all(cli.data())?;
    let db = cli.data().join("reins.db");
    std::fs::write(&db, b"not a database")?;
    let out = cli.run(&["ps"])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains(&db.display().to_string()),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(&db)?, b"not a database");
    Ok(())
}

#[test]
fn run_json_is_one_camel_case_event_per_line() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let out = cli
        .cmd()
        .args(["run", "--json", "--plan"])
        .arg(Cli::plan("tidy-configs.toml"))
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let events: Vec<serde_json::Value> = String::from_utf8(out.stdout)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(
        kinds,
        ["created", "attempt", "step", "step", "step", "step", "finished"]
    );
    assert!(
        events[1].get("resumedFrom").is_some(),
        "fields are camelCase: {}",
        events[1]
    );
    assert_eq!(events[6]["state"], "succeeded");
    Ok(())
}
