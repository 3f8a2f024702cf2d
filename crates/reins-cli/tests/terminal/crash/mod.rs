//! Crash between intent and effect, and between effect and confirm: the process really aborts at a
//! named fault point (like kill -9), a worker restarts the run, and every effect is applied exactly
//! once with exact file contents. Needs `--features fault-injection`.

#![cfg(feature = "fault-injection")]

use crate::common::{text, Cli};

/// `reins worker --once`, counting effects in `effects`.
fn worker_once(cli: &Cli, effects: &std::path::Path) -> anyhow::Result<std::process::Output> {
    Ok(cli
        .cmd()
        .args(["worker", "--once"])
        .env("REINS_EFFECT_LOG", effects)
        .output()?)
}

/// Runs tidy-configs with the fault point armed and checks that the process died by a signal there.
/// The lease stays at its 30 s default: the restarted worker must see at once that the holder is
/// gone (pid and start time), not wait for the lease.
fn crash_at(
    cli: &Cli,
    point: &str,
    effects: &std::path::Path,
) -> anyhow::Result<std::process::Output> {
    let crashed = cli
        .cmd()
        .args(["run", "--plan"])
        .arg(Cli::plan("tidy-configs.toml"))
        .arg("--workspace")
        .arg(cli.ws())
        .env("REINS_FAULT", point)
        .env("REINS_EFFECT_LOG", effects)
        .output()?;
    assert_eq!(
        crashed.status.code(),
        None,
        "the process must die by a signal at {point}: {}",
        text(&crashed)
    );
    Ok(crashed)
}

/// tidy-configs has three effects: move, delete, edit.
fn crash_and_recover(point: &str) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let original_runbook = cli.read("docs/RUNBOOK.md")?;

    let crashed = crash_at(&cli, point, &effects)?;
    assert!(text(&crashed).contains(point), "{}", text(&crashed));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(
        show["run"]["state"], "running",
        "the dead worker left the run running"
    );
    assert_eq!(
        show["intents"][0]["status"], "pending",
        "the first effect's intent is pending"
    );
    let worker = worker_once(&cli, &effects)?;
    assert_eq!(worker.status.code(), Some(0), "{}", text(&worker));
    let printed = text(&worker);
    assert!(printed.contains("took over an abandoned run"), "{printed}");
    let expected_settlement = if point == "after_intent" {
        "had not run; ran it once"
    } else {
        "already held the post-image"
    };
    assert!(printed.contains(expected_settlement), "{point}: {printed}");

    let log = std::fs::read_to_string(&effects)?;
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.len(),
        3,
        "each of the three effects ran exactly once across the crash:\n{log}"
    );
    assert!(
        lines[0].starts_with("Rename")
            && lines[1].starts_with("Remove")
            && lines[2].starts_with("Put"),
        "{log}"
    );

    assert!(!cli.ws().join("config/nginx.conf.bak").exists());
    assert!(cli
        .read("archive/nginx.conf.bak")?
        .contains("server_name app.internal;"));
    assert!(!cli.ws().join("tmp/render-cache.tmp").exists());
    assert_eq!(
        cli.read("docs/RUNBOOK.md")?,
        format!("{original_runbook}- Old config backups live in archive/.\n")
    );

    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded");
    let intents = show["intents"].as_array().cloned().unwrap_or_default();
    assert_eq!(intents.len(), 3);
    assert!(
        intents.iter().all(|i| i["status"] == "confirmed"),
        "{intents:?}"
    );
    assert!(intents[0]["settledBy"]
        .as_str()
        .unwrap_or("")
        .contains(expected_settlement));
    assert_eq!(show["attempts"].as_array().map(Vec::len), Some(2));
    let doctor = cli.run(&["doctor"])?;
    assert_eq!(doctor.status.code(), Some(0), "{}", text(&doctor));
    Ok(())
}

#[test]
fn crash_between_intent_and_effect() -> anyhow::Result<()> {
    crash_and_recover("after_intent")
}

#[test]
fn crash_between_effect_and_confirm() -> anyhow::Result<()> {
    crash_and_recover("after_effect")
}

#[test]
fn crash_after_confirm_loses_nothing_and_repeats_nothing() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    crash_at(&cli, "after_confirm", &effects)?;
    let worker = worker_once(&cli, &effects)?;
    assert_eq!(worker.status.code(), Some(0), "{}", text(&worker));
    assert_eq!(
        std::fs::read_to_string(&effects)?.lines().count(),
        3,
        "{}",
        text(&worker)
    );
    let id = cli.only_run()?;
    assert_eq!(cli.json(&["show", &id])?["run"]["state"], "succeeded");
    Ok(())
}

/// tidy-configs started with `--no-wait`, with extra environment and global arguments.
fn run_tidy(
    cli: &Cli,
    effects: &std::path::Path,
    envs: &[(&str, &str)],
    args: &[&str],
) -> anyhow::Result<std::process::Output> {
    let mut cmd = cli.cmd();
    cmd.args(args)
        .args(["run", "--no-wait", "--plan"])
        .arg(Cli::plan("tidy-configs.toml"))
        .arg("--workspace")
        .arg(cli.ws())
        .env("REINS_EFFECT_LOG", effects);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    Ok(cmd.output()?)
}

mod every_point;
mod retries;
mod unknown;
