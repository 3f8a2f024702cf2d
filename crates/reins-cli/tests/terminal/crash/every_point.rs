//! Every fault point for every file tool, an ambiguous intent commit, a frozen worker fenced out,
//! and an approved action interrupted by a crash.

use super::{run_tidy, worker_once};
use crate::common::{signal, text, Cli};

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
