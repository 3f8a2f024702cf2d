//! Crash between intent and effect, and between effect and confirm: the process really aborts at a
//! named fault point (like kill -9), a worker restarts the run, and every effect is applied exactly
//! once with exact file contents. Needs `--features fault-injection`.

#![cfg(feature = "fault-injection")]

mod common;

/// Sends `sig` to a child process.
fn signal(child: &std::process::Child, sig: rustix::process::Signal) -> anyhow::Result<()> {
    let pid = rustix::process::Pid::from_child(child);
    Ok(rustix::process::kill_process(pid, sig)?)
}

use common::{text, Cli};

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

#[test]
fn files_changed_by_hand_after_a_crash_suspend_the_run_instead_of_guessing() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    crash_at(&cli, "after_intent", &effects)?;
    // The pending effect is "move config/nginx.conf.bak to archive/". Someone deletes the file by
    // hand: the disk now matches neither the state before the move nor the state after it.
    std::fs::remove_file(cli.ws().join("config/nginx.conf.bak"))?;

    let worker = worker_once(&cli, &effects)?;
    assert_eq!(worker.status.code(), Some(0), "{}", text(&worker));
    assert!(
        text(&worker).contains("outcome unknown"),
        "{}",
        text(&worker)
    );
    assert!(!effects.exists(), "no effect may run on a guess");
    assert!(
        cli.ws().join("tmp/render-cache.tmp").exists(),
        "later steps did not run"
    );

    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("match neither"),
        "{show}"
    );
    assert_eq!(show["intents"][0]["status"], "unknown");
    assert_eq!(
        show["steps"][1]["status"], "unknown",
        "the step says so too"
    );
    let human = cli.run(&["show", &id])?;
    assert!(text(&human).contains("suspended"), "{}", text(&human));
    Ok(())
}

/// Crashes before the first effect (the move of config/nginx.conf.bak), lets `change` alter the
/// disk so the outcome cannot be known, and returns the suspended run's id and its unknown intent.
fn suspended_with_unknown_outcome(
    cli: &Cli,
    effects: &std::path::Path,
    change: impl FnOnce(&Cli) -> anyhow::Result<()>,
) -> anyhow::Result<(String, String)> {
    crash_at(cli, "after_intent", effects)?;
    change(cli)?;
    let worker = worker_once(cli, effects)?;
    assert!(text(&worker).contains("reins resolve"), "{}", text(&worker));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended");
    Ok((
        id,
        show["intents"][0]["id"].as_str().unwrap_or("").to_owned(),
    ))
}

fn resume_with_worker(cli: &Cli, effects: &std::path::Path) -> anyhow::Result<String> {
    let worker = worker_once(cli, effects)?;
    assert_eq!(worker.status.code(), Some(0), "{}", text(&worker));
    Ok(text(&worker))
}

#[test]
fn a_person_marks_an_unknown_effect_done_and_the_run_goes_on() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let (id, intent) = suspended_with_unknown_outcome(&cli, &effects, |cli| {
        Ok(std::fs::remove_file(
            cli.ws().join("config/nginx.conf.bak"),
        )?)
    })?;
    let out = cli.run(&[
        "resolve",
        &intent[..8],
        "--done",
        "--note",
        "I moved it myself",
    ])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("queued again"), "{}", text(&out));
    resume_with_worker(&cli, &effects)?;

    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(show["intents"][0]["status"], "confirmed");
    assert!(show["intents"][0]["settledBy"]
        .as_str()
        .unwrap_or("")
        .contains("I moved it myself"));
    let log = std::fs::read_to_string(&effects)?;
    assert_eq!(
        log.lines().count(),
        2,
        "the move was not run; delete and edit were:\n{log}"
    );
    assert!(
        !cli.ws().join("archive/nginx.conf.bak").exists(),
        "nothing moved a file that was gone"
    );
    Ok(())
}

#[test]
fn a_person_skips_an_unknown_effect_and_the_agent_hears_it() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let (id, intent) = suspended_with_unknown_outcome(&cli, &effects, |cli| {
        Ok(std::fs::remove_file(
            cli.ws().join("config/nginx.conf.bak"),
        )?)
    })?;
    let out = cli.run(&["resolve", &intent, "--skip"])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    resume_with_worker(&cli, &effects)?;
    let show = cli.json(&["show", &id])?;
    // The plan expected the move to succeed, so the script agent stops there.
    assert_eq!(show["run"]["state"], "failed", "{show}");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("skipped"),
        "{show}"
    );
    assert_eq!(show["intents"][0]["status"], "skipped");
    assert!(!effects.exists(), "nothing ran");
    Ok(())
}

#[test]
fn a_person_retries_an_unknown_effect_and_it_runs_once_on_the_new_content() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let (id, intent) = suspended_with_unknown_outcome(&cli, &effects, |cli| {
        Ok(std::fs::write(
            cli.ws().join("config/nginx.conf.bak"),
            "edited by hand\n",
        )?)
    })?;
    let out = cli.run(&["resolve", &intent, "--retry"])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Deciding twice is refused: the intent is gone (retry) or settled.
    let again = cli.run(&["resolve", &intent, "--done"])?;
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    resume_with_worker(&cli, &effects)?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(cli.read("archive/nginx.conf.bak")?, "edited by hand\n");
    assert_eq!(std::fs::read_to_string(&effects)?.lines().count(), 3);
    let intents = show["intents"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        intents.len(),
        3,
        "one intent per effect: the retried one replaced the unknown one"
    );
    Ok(())
}

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

#[test]
fn a_transient_error_is_retried_with_backoff_and_each_retry_is_shown() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let out = run_tidy(
        &cli,
        &effects,
        &[("REINS_FAULT_ERROR", "intent_write:busy:2")],
        &[],
    )?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded");
    let retries = show["retries"].as_array().cloned().unwrap_or_default();
    assert_eq!(retries.len(), 2, "{show}");
    assert!(retries.iter().all(|r| r["class"] == "transient"));
    assert!(
        retries[1]["delayMs"].as_i64() > retries[0]["delayMs"].as_i64(),
        "the backoff grows: {retries:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&effects)?.lines().count(),
        3,
        "each effect once"
    );
    let human = text(&cli.run(&["show", &id])?);
    assert!(
        human.contains("retries (budget used)") && human.contains("transient"),
        "{human}"
    );
    Ok(())
}

#[test]
fn a_full_disk_when_writing_the_intent_runs_nothing_and_waits_for_a_person() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let out = run_tidy(
        &cli,
        &effects,
        &[("REINS_FAULT_ERROR", "intent_write:enospc")],
        &["--retry-max", "5"],
    )?;
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended", "{}", text(&out));
    let reason = show["run"]["lastError"].as_str().unwrap_or("");
    assert!(
        reason.contains("No space left") && reason.contains("disk is full"),
        "{reason}"
    );
    assert!(
        show["retries"].as_array().is_none_or(Vec::is_empty),
        "not retried blindly"
    );
    assert!(!effects.exists(), "the effect never ran");
    assert!(
        show["intents"].as_array().is_none_or(Vec::is_empty),
        "no intent was written"
    );

    // Space freed: resume, and it completes with every effect once.
    cli.run(&["resume", &id])?;
    let worker = worker_once(&cli, &effects)?;
    assert_eq!(worker.status.code(), Some(0), "{}", text(&worker));
    assert_eq!(cli.json(&["show", &id])?["run"]["state"], "succeeded");
    assert_eq!(std::fs::read_to_string(&effects)?.lines().count(), 3);
    Ok(())
}

#[test]
fn a_spent_retry_budget_suspends_the_run_with_the_reason() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    run_tidy(
        &cli,
        &effects,
        &[("REINS_FAULT_ERROR", "intent_write:busy")],
        &["--retry-max", "2"],
    )?;
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("retry budget exhausted after 2 retries"),
        "{show}"
    );
    assert_eq!(show["retries"].as_array().map(Vec::len), Some(2));
    Ok(())
}

#[test]
fn a_run_that_keeps_killing_its_worker_stops_at_the_budget() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    crash_at(&cli, "after_intent", &effects)?;
    // Every worker that takes it over dies at the same point.
    for _ in 0..2 {
        let w = cli
            .cmd()
            .args(["--retry-max", "2", "worker", "--once"])
            .env("REINS_FAULT", "after_confirm")
            .env("REINS_EFFECT_LOG", &effects)
            .output()?;
        assert_eq!(w.status.code(), None, "died again: {}", text(&w));
    }
    let w = cli
        .cmd()
        .args(["--retry-max", "2", "worker", "--once"])
        .env("REINS_FAULT", "after_confirm")
        .env("REINS_EFFECT_LOG", &effects)
        .output()?;
    assert_eq!(w.status.code(), Some(0), "{}", text(&w));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("lost its worker"),
        "{show}"
    );
    let retries = show["retries"].as_array().cloned().unwrap_or_default();
    assert_eq!(retries.len(), 3);
    assert!(retries.iter().all(|r| r["class"] == "worker_lost"));
    Ok(())
}

/// Every named fault point × every side-effecting tool: the process dies there, a worker restarts
/// the run, and the effect has happened exactly once with the exact result. `during_effect` sits
/// inside the atomic file write (temp file written and synced, not yet renamed), so it applies to
/// the tools that write content; a delete or a move is a single atomic system call.
#[test]
fn kill_at_every_point_for_every_file_tool() -> anyhow::Result<()> {
    type Check = fn(&Cli) -> anyhow::Result<bool>;
    let tools: [(&str, &str, Check); 4] = [
        (
            "write",
            r#"tool = "fs.write"
args = { path = "config/new.conf", content = "fresh\n" }"#,
            |cli| Ok(cli.read("config/new.conf")? == "fresh\n"),
        ),
        (
            "edit",
            r#"tool = "fs.edit"
args = { path = "docs/RUNBOOK.md", old = "95%", new = "90%" }"#,
            |cli| {
                let text = cli.read("docs/RUNBOOK.md")?;
                Ok(text.contains("90%") && !text.contains("95%"))
            },
        ),
        (
            "delete",
            r#"tool = "fs.delete"
args = { path = "tmp/render-cache.tmp" }"#,
            |cli| Ok(!cli.ws().join("tmp/render-cache.tmp").exists()),
        ),
        (
            "move",
            r#"tool = "fs.move"
args = { from = "config/nginx.conf.bak", to = "archive/nginx.conf.bak" }"#,
            |cli| {
                Ok(!cli.ws().join("config/nginx.conf.bak").exists()
                    && cli.read("archive/nginx.conf.bak")?.contains("server_name"))
            },
        ),
    ];
    let points = [
        "before_intent",
        "after_intent",
        "during_effect",
        "after_effect",
        "after_confirm",
    ];
    for (tool, step, done) in tools {
        for point in points {
            if point == "during_effect" && matches!(tool, "delete" | "move") {
                continue;
            }
            let case = format!("{tool} killed at {point}");
            let cli = Cli::new()?;
            let plan = cli.tmp.path().join("one.toml");
            std::fs::write(
                &plan,
                format!("name = \"one {tool}\"\ngoal = \"g\"\n[[steps]]\n{step}\n[[steps]]\ntool = \"fs.list\"\nargs = {{ path = \".\" }}\n"),
            )?;
            let effects = cli.tmp.path().join("effects.log");
            let crashed = cli
                .cmd()
                .args(["run", "--plan"])
                .arg(&plan)
                .arg("--workspace")
                .arg(cli.ws())
                .env("REINS_FAULT", point)
                .env("REINS_EFFECT_LOG", &effects)
                .output()?;
            assert_eq!(crashed.status.code(), None, "{case}: {}", text(&crashed));
            let worker = worker_once(&cli, &effects)?;
            assert_eq!(worker.status.code(), Some(0), "{case}: {}", text(&worker));
            let id = cli.only_run()?;
            let show = cli.json(&["show", &id])?;
            assert_eq!(show["run"]["state"], "succeeded", "{case}: {show}");
            let ran = std::fs::read_to_string(&effects).unwrap_or_default();
            assert_eq!(
                ran.lines().count(),
                1,
                "{case}: the effect ran once:\n{ran}"
            );
            assert!(done(&cli)?, "{case}: the files show the effect");
            let leftovers = walk(&cli.ws())?
                .into_iter()
                .filter(|p| p.contains(".reins-tmp-"))
                .collect::<Vec<_>>();
            assert!(
                leftovers.is_empty(),
                "{case}: temp files left: {leftovers:?}"
            );
            let doctor = cli.run(&["doctor"])?;
            assert_eq!(doctor.status.code(), Some(0), "{case}: {}", text(&doctor));
        }
    }
    Ok(())
}

fn walk(dir: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            out.extend(walk(&entry.path())?);
        } else {
            out.push(entry.path().display().to_string());
        }
    }
    Ok(out)
}

#[test]
fn an_ambiguous_intent_commit_is_absorbed_without_a_duplicate() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    // The first intent commits, but the worker is told the commit failed (a transient error).
    let out = run_tidy(
        &cli,
        &effects,
        &[("REINS_FAULT_ERROR", "intent_commit:busy:1")],
        &[],
    )?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(show["retries"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        show["steps"].as_array().map(Vec::len),
        Some(4),
        "no duplicate step rows"
    );
    assert_eq!(
        show["intents"].as_array().map(Vec::len),
        Some(3),
        "no duplicate intent rows"
    );
    assert_eq!(
        std::fs::read_to_string(&effects)?.lines().count(),
        3,
        "each effect once"
    );
    Ok(())
}

/// A worker frozen (SIGSTOP) past its lease is taken over; when it wakes (SIGCONT) not one of its
/// writes is accepted, it runs no effect, and it leaves the run as the other worker and the
/// person left it.
#[test]
fn a_frozen_worker_wakes_up_fenced_out() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let queued = cli
        .cmd()
        .args(["run", "--queue", "--plan"])
        .arg(Cli::plan("tidy-configs.toml"))
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(queued.status.code(), Some(0), "{}", text(&queued));
    let id = cli.only_run()?;
    // Worker A: 2 s lease, and each effect waits 1.5 s after its intent is written.
    let a = cli
        .cmd()
        .args(["--lease-secs", "2", "worker", "--once"])
        .env("REINS_FAULT_DELAY_MS", "1500")
        .env("REINS_EFFECT_LOG", &effects)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let show = cli.json(&["show", &id])?;
        if show["intents"][0]["status"] == "pending" {
            break;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "A never wrote its intent"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    signal(&a, rustix::process::Signal::STOP)?;
    std::thread::sleep(std::time::Duration::from_millis(2500));

    // Worker B takes over the expired lease, settles A's pending intent and finishes the run.
    let b = worker_once(&cli, &effects)?;
    assert_eq!(b.status.code(), Some(0), "{}", text(&b));
    assert!(text(&b).contains("took over"), "{}", text(&b));
    let before = cli.json(&["show", &id])?;
    assert_eq!(before["run"]["state"], "succeeded");

    signal(&a, rustix::process::Signal::CONT)?;
    let a = a.wait_with_output()?;
    assert_eq!(a.status.code(), Some(0), "A exits: {}", text(&a));
    let after = cli.json(&["show", &id])?;
    assert_eq!(
        after["run"], before["run"],
        "A changed nothing about the run"
    );
    assert_eq!(after["steps"], before["steps"]);
    assert_eq!(after["intents"], before["intents"]);
    assert_eq!(
        after["auditEvents"], before["auditEvents"],
        "A appended nothing"
    );
    let log = std::fs::read_to_string(&effects)?;
    assert_eq!(
        log.lines().count(),
        3,
        "each effect once; A ran none:\n{log}"
    );
    let doctor = cli.run(&["doctor"])?;
    assert_eq!(doctor.status.code(), Some(0), "{}", text(&doctor));
    Ok(())
}

/// A reviewed action killed at every point of carrying it out: after the approval the worker dies;
/// the next worker settles what the journal says from the disk and the approved edit runs exactly
/// once, without a second review.
#[test]
fn an_approved_action_interrupted_by_a_crash_runs_once_without_a_second_review(
) -> anyhow::Result<()> {
    for point in [
        "before_intent",
        "after_intent",
        "after_effect",
        "after_confirm",
    ] {
        approved_then_crash_at(point)?;
    }
    Ok(())
}

fn approved_then_crash_at(point: &str) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let parked = cli
        .strict_cmd()
        .args(["run", "--no-wait", "--plan"])
        .arg(Cli::plan("fix-logrotate.toml"))
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(parked.status.code(), Some(3), "{}", text(&parked));
    let list: serde_json::Value = serde_json::from_slice(
        &cli.strict_cmd()
            .args(["approvals", "--json"])
            .output()?
            .stdout,
    )?;
    let id = list[0]["id"].as_str().unwrap_or_default().to_owned();
    let approved = cli.strict_cmd().args(["approve", &id]).output()?;
    assert_eq!(approved.status.code(), Some(0), "{}", text(&approved));

    let crashed = cli
        .strict_cmd()
        .args(["worker", "--once"])
        .env("REINS_FAULT", point)
        .env("REINS_EFFECT_LOG", &effects)
        .output()?;
    assert_eq!(crashed.status.code(), None, "{point}: {}", text(&crashed));
    let recovered = cli
        .strict_cmd()
        .args(["worker", "--once"])
        .env("REINS_EFFECT_LOG", &effects)
        .output()?;
    let printed = text(&recovered);
    assert_eq!(recovered.status.code(), Some(0), "{point}: {printed}");
    let log = std::fs::read_to_string(&effects).unwrap_or_default();
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("config/logrotate.conf"))
            .count(),
        1,
        "{point}: the approved edit ran exactly once: {log}\n{printed}"
    );
    assert!(cli.read("config/logrotate.conf")?.contains("rotate 7"));
    let all: serde_json::Value = serde_json::from_slice(
        &cli.strict_cmd()
            .args(["approvals", "--all", "--json"])
            .output()?
            .stdout,
    )?;
    let statuses: Vec<(i64, String)> = all
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| Some((a["stepSeq"].as_i64()?, a["status"].as_str()?.to_owned())))
        .collect();
    assert_eq!(
        statuses,
        [(4, "approved".to_owned()), (5, "pending".to_owned())],
        "{point}: no second review of step 4: {printed}"
    );
    Ok(())
}
