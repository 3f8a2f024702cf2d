//! End to end, in a real window: each test starts the real `reins-app` binary on its own data dir
//! and drives it like a person would, then checks what reached the disk and the CLI. Run by
//! `scripts/e2e` (Xvfb, a session bus, tauri-driver); `#[ignore]`d in a plain `cargo test`, which
//! has no display.

mod harness;
mod notifications;
mod tray;
mod window;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use harness::{App, Home};
use thirtyfour::prelude::*;

const EDIT_PLAN: &str = r#"
name = "Fix the greeting"
goal = "Make the greeting friendly"

[[steps]]
tool = "fs.read"
why  = "see the current greeting"
args = { path = "greeting.txt" }

[[steps]]
tool = "fs.edit"
why  = "the greeting is rude"
args = { path = "greeting.txt", old = "go away", new = "hello there" }
"#;

const WRITE_PLAN: &str = r#"
name = "Write release notes"
goal = "Draft the release notes"

[[steps]]
tool = "fs.write"
why  = "start the notes"
args = { path = "NOTES.md", content = "draft by the agent\n" }
"#;

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits for the approval card and returns how long after the approval was created it was on
/// screen (the card records when it first rendered).
async fn card_latency(app: &App, home: &Home) -> Result<Duration> {
    let card = app.find(By::Css("[data-testid='approval-card']")).await?;
    let shown: f64 = card
        .attr("data-shown-at")
        .await?
        .context("data-shown-at")?
        .parse()?;
    let id = card.attr("data-approval").await?.context("data-approval")?;
    let list = home.reins(&["approvals", "--json"], &[])?;
    let rows: serde_json::Value = serde_json::from_str(&list)?;
    let created = rows
        .as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == id.as_str()))
        .and_then(|r| r["createdAt"].as_i64())
        .context("approval createdAt")?;
    Ok(Duration::from_micros(
        ((shown - created as f64).max(0.0) * 1000.0) as u64,
    ))
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn a_plan_run_stops_for_review_and_approving_changes_the_file() -> Result<()> {
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("greeting.txt", "go away\n")])?;
    let app = App::launch(&home).await?;
    println!(
        "e2e: window visible after launch: {} ms",
        app.launched_in.as_millis()
    );
    home.queue_plan(EDIT_PLAN, &ws)?;
    let latency = card_latency(&app, &home).await?;
    println!(
        "e2e: approval on screen {} ms after the agent asked",
        latency.as_millis()
    );
    let del = app
        .find(By::Css(".diff-line[data-kind='del']"))
        .await?
        .text()
        .await?;
    let add = app
        .find(By::Css(".diff-line[data-kind='add']"))
        .await?
        .text()
        .await?;
    assert!(
        del.contains("go away") && add.contains("hello there"),
        "the card shows the exact diff: {del:?} / {add:?}"
    );
    assert_eq!(
        read(&ws.join("greeting.txt")),
        "go away\n",
        "nothing changes before the decision"
    );
    app.screenshot("approvals").await?;
    // The pending count reaches the desktop (the window title here; the tray shows the same).
    app.until("the window title shows 1 pending", || async {
        let out = std::process::Command::new("xdotool")
            .args(["search", "--name", r"^Reins \(1\)$"])
            .output()?;
        Ok(!out.stdout.is_empty())
    })
    .await?;
    app.click(".diff-toolbar button:nth-child(2)").await?;
    app.find(By::Css(".diff-pair")).await?;
    app.screenshot("approvals-side-by-side").await?;
    app.key("a").await?;
    app.until("the approved edit is on disk", || async {
        Ok(read(&ws.join("greeting.txt")) == "hello there\n")
    })
    .await?;
    app.find(By::Css("[data-testid='inbox-empty']")).await?;
    app.quit().await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn b_reject_with_a_reason_leaves_the_file_and_the_reason_shows_in_the_timeline() -> Result<()>
{
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("greeting.txt", "go away\n")])?;
    let run = home.queue_plan(EDIT_PLAN, &ws)?;
    let app = App::launch(&home).await?;
    app.find(By::Css("[data-testid='approval-card']")).await?;
    app.key("r").await?;
    let reason = app.find(By::Css("textarea[name='reject-reason']")).await?;
    reason.send_keys("keep it, the team likes it").await?;
    app.click("[data-testid='confirm-reject']").await?;
    app.find(By::Css("[data-testid='inbox-empty']")).await?;
    app.view("runs").await?;
    app.click(&format!("[data-run='{run}'] button.run-name"))
        .await?;
    app.until("the reason is in the timeline", || async {
        let t = app
            .find(By::Css("[data-testid='timeline']"))
            .await?
            .text()
            .await?;
        Ok(t.contains("keep it, the team likes it"))
    })
    .await?;
    app.screenshot("run-detail").await?;
    assert_eq!(
        read(&ws.join("greeting.txt")),
        "go away\n",
        "a rejected edit must not touch the file"
    );
    app.view("runs").await?;
    app.find(By::Css("[data-testid='runs-table']")).await?;
    app.screenshot("runs").await?;
    app.quit().await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn c_edit_then_approve_writes_the_edited_content() -> Result<()> {
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("README.md", "project\n")])?;
    home.queue_plan(WRITE_PLAN, &ws)?;
    let app = App::launch(&home).await?;
    app.find(By::Css("[data-testid='approval-card']")).await?;
    app.key("e").await?;
    app.fill("textarea[name='edit-content']", "written by a person")
        .await?;
    app.screenshot("approvals-edit").await?;
    app.click("[data-testid='approve-edited']").await?;
    app.until("the edited content is on disk", || async {
        Ok(read(&ws.join("NOTES.md")) == "written by a person")
    })
    .await?;
    app.quit().await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn d_deleting_a_fact_removes_it_from_the_view_and_the_cli() -> Result<()> {
    let home = Home::new()?;
    home.remember("style", "indent", "tabs, four wide")?;
    home.remember("language", "reply", "answer in English")?;
    let list: serde_json::Value =
        serde_json::from_str(&home.reins(&["memory", "list", "--json"], &[])?)?;
    let id = list
        .as_array()
        .and_then(|a| a.iter().find(|f| f["key"] == "indent"))
        .and_then(|f| f["id"].as_str())
        .context("the fact's id")?
        .to_owned();
    let app = App::launch(&home).await?;
    app.view("memory").await?;
    app.find(By::Css(format!("[data-fact='{id}']"))).await?;
    app.screenshot("memory").await?;
    app.click(&format!("[data-fact='{id}'] [data-testid='delete-fact']"))
        .await?;
    app.until("the fact is gone from the view", || async {
        Ok(app
            .d()
            .find_all(By::Css(format!("[data-fact='{id}']")))
            .await?
            .is_empty())
    })
    .await?;
    let after = home.reins(&["memory", "list", "--json"], &[])?;
    assert!(
        !after.contains(&id) && !after.contains("tabs, four wide"),
        "deleted in the app, gone for the CLI: {after}"
    );
    assert!(
        after.contains("answer in English"),
        "only that fact is deleted"
    );
    app.quit().await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn e_exporting_the_audit_log_gives_a_file_the_cli_accepts() -> Result<()> {
    let home = Home::new()?;
    home.remember("style", "indent", "tabs")?;
    let out = home.root.path().join("exported-audit.jsonl");
    let app = App::launch(&home).await?;
    app.view("audit").await?;
    app.until("the chain is verified", || async {
        Ok(app
            .find(By::Css("[data-testid='chain-status']"))
            .await?
            .text()
            .await?
            .contains("intact"))
    })
    .await?;
    app.screenshot("audit").await?;
    app.click("[data-testid='export-jsonl']").await?;
    save_in_native_dialog("Export the audit log", &out).await?;
    app.find(By::Css("[data-testid='export-done']")).await?;
    let check = home.reins(&["audit", "verify-export", &out.display().to_string()], &[])?;
    assert!(out.exists(), "the export is on disk");
    println!("e2e: verify-export: {}", check.lines().next().unwrap_or(""));
    app.quit().await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn f_an_approval_survives_quitting_the_app_and_approving_after_restart_works() -> Result<()> {
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("greeting.txt", "go away\n")])?;
    home.queue_plan(EDIT_PLAN, &ws)?;
    let app = App::launch(&home).await?;
    let first = app
        .find(By::Css("[data-testid='approval-card']"))
        .await?
        .attr("data-approval")
        .await?;
    app.quit().await?;
    assert!(App::pid(&home).is_none(), "the app has quit");
    let app = App::launch(&home).await?;
    let again = app
        .find(By::Css("[data-testid='approval-card']"))
        .await?
        .attr("data-approval")
        .await?;
    assert_eq!(
        first, again,
        "the same approval is still pending after a restart"
    );
    app.key("a").await?;
    app.until("the edit is on disk", || async {
        Ok(read(&ws.join("greeting.txt")) == "hello there\n")
    })
    .await?;
    app.quit().await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn g_first_launch_offers_the_demo_and_every_view_renders() -> Result<()> {
    let home = Home::new()?;
    let app = App::launch(&home).await?;
    app.find(By::Css("[data-testid='start-demo']")).await?;
    app.screenshot("first-launch").await?;
    app.click("[data-testid='start-demo']").await?;
    app.find(By::Css("[data-testid='approval-card']")).await?;
    // Approve for the whole workspace: a grant appears under Rules.
    app.click(".scopes label:nth-of-type(3)").await?;
    app.click("[data-testid='approve']").await?;
    app.view("rules").await?;
    app.find(By::Css("[data-testid='grants']")).await?;
    app.screenshot("rules").await?;
    app.view("settings").await?;
    app.until("the provider defaults are shown", || async {
        let url = app
            .find(By::Css("input[name='base-url']"))
            .await?
            .prop("value")
            .await?;
        Ok(url.is_some_and(|u| u.starts_with("http")))
    })
    .await?;
    app.screenshot("settings").await?;
    // One instance per data dir: a second launch hands over to the first and exits.
    let status = harness::launch_again(&home).await?;
    assert!(
        status.is_some_and(|s| s.success()),
        "a second launch on the same data dir exits: {status:?}"
    );
    app.view("approvals").await?;
    app.find(By::Css("nav.sidebar")).await?;
    // Idle memory: nothing to do for two seconds.
    tokio::time::sleep(Duration::from_secs(2)).await;
    if let Some(pid) = App::pid(&home) {
        if let Some(kib) = harness::rss_kib(pid) {
            println!(
                "e2e: idle app process RSS: {:.1} MiB (webview processes not included)",
                kib as f64 / 1024.0
            );
        }
    }
    app.quit().await
}

/// Types a path into the GTK save dialog and presses Enter (xdotool; the dialog is native, outside
/// the webview).
async fn save_in_native_dialog(title: &str, path: &std::path::Path) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(15);
    let window = loop {
        let out = std::process::Command::new("xdotool")
            .args(["search", "--name", title])
            .output()
            .context("xdotool")?;
        let ids = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if let Some(id) = ids.lines().last().filter(|l| !l.is_empty()) {
            break id.to_owned();
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no native dialog titled {title:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let run = |args: &[&str]| -> Result<()> {
        let ok = std::process::Command::new("xdotool")
            .args(args)
            .status()?
            .success();
        anyhow::ensure!(ok, "xdotool {args:?} failed");
        Ok(())
    };
    run(&["windowfocus", "--sync", &window])?;
    run(&["key", "--window", &window, "ctrl+a"])?;
    run(&[
        "type",
        "--window",
        &window,
        "--delay",
        "5",
        &path.display().to_string(),
    ])?;
    run(&["key", "--window", &window, "Return"])?;
    Ok(())
}

/// The figures the issue asks for, over several approvals: how long after the agent asked an
/// approval is on screen (goal ≤ 150 ms), and how long the window takes to show.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn h_measure_approval_latency() -> Result<()> {
    const ROUNDS: usize = 7;
    let home = Home::new()?;
    let app = App::launch(&home).await?;
    let mut latencies = Vec::new();
    for i in 0..ROUNDS {
        let ws = home.workspace(&format!("ws{i}"), &[("greeting.txt", "go away\n")])?;
        home.queue_plan(EDIT_PLAN, &ws)?;
        latencies.push(card_latency(&app, &home).await?);
        app.key("a").await?;
        app.until("the edit is on disk", || async {
            Ok(read(&ws.join("greeting.txt")) == "hello there\n")
        })
        .await?;
        app.find(By::Css("[data-testid='inbox-empty']")).await?;
    }
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "e2e: approval on screen after the agent asked, {ROUNDS} runs: median {:.0} ms, min {:.0} ms, max {:.0} ms (goal ≤ 150 ms)",
        ms(latencies[ROUNDS / 2]),
        ms(latencies[0]),
        ms(latencies[ROUNDS - 1])
    );
    println!(
        "e2e: window visible {} ms after the session asked for the app",
        app.launched_in.as_millis()
    );
    app.quit().await
}

/// Quitting drains: a command the person approved runs to its end, the run stops paused at the
/// safe point after it (checkpoint written), and the app exits cleanly.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn i_quitting_with_a_step_running_pauses_the_run_at_a_safe_point() -> Result<()> {
    const SLOW: &str = r#"
name = "Slow command"
goal = "Wait, then write"

[[steps]]
tool = "shell.exec"
why  = "wait for the service"
args = { argv = ["sleep", "3"] }

[[steps]]
tool = "fs.write"
args = { path = "after.txt", content = "written after the wait\n" }
"#;
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("README.md", "x\n")])?;
    let run = home.queue_plan(SLOW, &ws)?;
    let app = App::launch(&home).await?;
    app.find(By::Css("[data-testid='approval-card']")).await?;
    app.key("a").await?;
    // The command is running: ask the app to quit (SIGTERM, as a logout would).
    let pid = App::pid(&home).context("the app's pid")?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let asked = Instant::now();
    let killed = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status()?;
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(Instant::now() < deadline, "the app exits after draining");
    println!(
        "e2e: quit with a 3 s command running: exited {} ms after SIGTERM",
        asked.elapsed().as_millis()
    );
    let shown: serde_json::Value =
        serde_json::from_str(&home.reins(&["show", &run, "--json"], &[])?)?;
    assert_eq!(
        shown["run"]["state"], "paused",
        "the run stops paused at a safe point: {shown}"
    );
    let steps = shown["steps"].as_array().context("steps")?;
    assert_eq!(
        steps.first().and_then(|s| s["status"].as_str()),
        Some("done"),
        "the running command finished, not cut off: {steps:?}"
    );
    assert!(
        !ws.join("after.txt").exists(),
        "nothing after the safe point ran"
    );
    app.end_session_after_exit().await;
    Ok(())
}

/// Each new approval raises a desktop notification; clicking it opens that approval.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn j_a_notification_per_new_approval_and_clicking_it_opens_that_approval() -> Result<()> {
    let server = notifications::Notifications::serve().await?;
    let home = Home::new()?;
    let first_ws = home.workspace("one", &[("greeting.txt", "go away\n")])?;
    let second_ws = home.workspace("two", &[("greeting.txt", "go away\n")])?;
    let app = App::launch(&home).await?;
    // Apps of other tests share this session bus and its notification server: names tell ours.
    let plan = |name: &str| EDIT_PLAN.replace("Fix the greeting", name);
    home.queue_plan(&plan("Greeting one"), &first_ws)?;
    let card = app.find(By::Css("[data-testid='approval-card']")).await?;
    let first_approval = card.attr("data-approval").await?;
    home.queue_plan(&plan("Greeting two"), &second_ws)?;
    let mine = |run: &str| {
        let prefix = format!("{run} wants");
        server
            .shown()
            .into_iter()
            .find(move |n| n.summary.starts_with(&prefix))
    };
    app.until("a notification for each new approval", || async {
        Ok(mine("Greeting one").is_some() && mine("Greeting two").is_some())
    })
    .await?;
    let note = mine("Greeting two").context("the second run's notification")?;
    assert!(
        note.summary.contains("fs.edit"),
        "it says what the agent wants: {note:?}"
    );
    assert!(
        note.actions.iter().any(|a| a == "default"),
        "it can be clicked: {note:?}"
    );
    let shown_now = app
        .find(By::Css("[data-testid='approval-card']"))
        .await?
        .attr("data-approval")
        .await?;
    assert_eq!(
        shown_now, first_approval,
        "the inbox shows the older approval first"
    );
    server.click(note.id).await?;
    app.until("the clicked approval is open", || async {
        let card = app.find(By::Css("[data-testid='approval-card']")).await?;
        let run = card
            .find(By::Css(".card-head button.link"))
            .await?
            .text()
            .await?;
        Ok(card.attr("data-approval").await? != first_approval && run == "Greeting two")
    })
    .await?;
    app.quit().await
}

/// A run started from the Runs view (plan file + workspace folder typed in) stops at its review.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn k_a_run_started_in_the_app_stops_for_review() -> Result<()> {
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("greeting.txt", "go away\n")])?;
    let plan = home.root.path().join("fix.toml");
    std::fs::write(&plan, EDIT_PLAN)?;
    let app = App::launch(&home).await?;
    app.view("runs").await?;
    app.click("[data-testid='new-run']").await?;
    app.fill("input[name='workspace']", &ws.display().to_string())
        .await?;
    app.fill("input[name='plan']", &plan.display().to_string())
        .await?;
    app.click("[data-testid='start-run']").await?;
    app.find(By::Css("[data-testid='run-detail']")).await?;
    app.until("the run waits for a review", || async {
        let state = app
            .find(By::Css("[data-testid='run-state']"))
            .await?
            .text()
            .await?;
        Ok(state == "awaiting approval")
    })
    .await?;
    app.view("approvals").await?;
    let del = app
        .find(By::Css(".diff-line[data-kind='del']"))
        .await?
        .text()
        .await?;
    assert!(del.contains("go away"), "the card shows the diff: {del:?}");
    assert_eq!(
        read(&ws.join("greeting.txt")),
        "go away\n",
        "nothing changed before the decision"
    );
    app.quit().await
}

/// Closing the window detaches: the app keeps driving runs with no window, the tray shows what
/// waits and its "Open" brings the window back (so does launching the app again); the tray's
/// "Quit" drains and exits.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn l_closing_the_window_keeps_runs_going_and_the_tray_brings_it_back() -> Result<()> {
    let host = tray::Tray::serve().await?;
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("greeting.txt", "go away\n")])?;
    let app = App::launch(&home).await?;
    let pid = App::pid(&home).context("the app's pid")?;
    let icon = host.wait_for_item(pid).await?;
    assert_eq!(
        host.label(&icon).await?,
        "",
        "nothing waits: no count on the icon"
    );

    let x = window::Screen::connect()?;
    let win = x
        .window_of(pid)?
        .context("the app's window on the X display")?;
    assert!(x.is_mapped(win)?, "the window is on screen after launch");
    x.close(win)?;
    app.until("the closed window is off screen", || async {
        Ok(!x.is_mapped(win)?)
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        App::pid(&home),
        Some(pid),
        "closing the window does not end the app"
    );

    // With no window, a queued run is still driven: it reads, then stops at its review.
    let run = home.queue_plan(EDIT_PLAN, &ws)?;
    app.until(
        "the windowless app drives the run to its review",
        || async {
            let shown: serde_json::Value =
                serde_json::from_str(&home.reins(&["show", &run, "--json"], &[])?)?;
            Ok(shown["run"]["state"] == "awaiting_approval")
        },
    )
    .await?;
    app.until("the tray icon counts the approval", || async {
        Ok(host.label(&icon).await? == "1")
    })
    .await?;
    assert!(
        !x.is_mapped(win)?,
        "a new approval does not force the window open"
    );

    // The tray's "Open" brings the same window back, at that approval.
    host.click(&icon, "Open").await?;
    app.until("the window is back on screen", || async {
        x.is_mapped(win)
    })
    .await?;
    app.find(By::Css("[data-testid='approval-card']")).await?;
    app.key("a").await?;
    app.until("the approved edit is on disk", || async {
        Ok(read(&ws.join("greeting.txt")) == "hello there\n")
    })
    .await?;
    app.until("the tray count clears", || async {
        Ok(host.label(&icon).await?.is_empty())
    })
    .await?;

    // Closed again, launching the app again shows the running one instead of a second copy.
    x.close(win)?;
    app.until("the closed window is off screen", || async {
        Ok(!x.is_mapped(win)?)
    })
    .await?;
    let second = harness::launch_again(&home).await?;
    assert!(
        second.is_some_and(|s| s.success()),
        "the second launch hands over and exits: {second:?}"
    );
    app.until("launching again shows the window", || async {
        x.is_mapped(win)
    })
    .await?;
    assert_eq!(App::pid(&home), Some(pid), "still the one app");

    // The tray's "Quit" drains and exits.
    host.click(&icon, "Quit").await?;
    app.until("the app exits", || async { Ok(App::pid(&home).is_none()) })
        .await?;
    app.end_session_after_exit().await;
    Ok(())
}
