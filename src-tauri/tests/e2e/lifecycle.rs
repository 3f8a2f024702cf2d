//! The app's life around its runs: quitting and restarting, a quit mid-step, notifications, a run
//! started in the app, and the window closed while runs go on.

use super::*;

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
    // A command whose point is its own time: shown and approved as a command, not staged.
    std::fs::create_dir_all(home.config())?;
    std::fs::write(
        home.config().join("policy.toml"),
        "[staging]\nnever = [\"sleep\"]\n",
    )?;
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

/// Each new approval raises a desktop notification naming the run, the agent, the action and the
/// risk; clicking it opens that approval. A low- or medium-risk card's notification approves or
/// rejects exactly what it showed, only while the screen is known to be unlocked; a high-risk
/// card's has no such buttons.
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
        let prefix = format!("{run}: ");
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
        note.summary
            .contains("script wants fs.edit greeting.txt (medium risk)"),
        "it says who wants what, at what risk, in one line: {note:?}"
    );
    for action in ["default", "approve", "reject"] {
        assert!(
            note.actions.iter().any(|a| a == action),
            "it has {action}: {note:?}"
        );
    }
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

    // With the screen unlocked, Approve on the first run's notification carries it out.
    let saver = notifications::ScreenSaver::serve(false).await?;
    let first = mine("Greeting one").context("the first run's notification")?;
    server.invoke(first.id, "approve").await?;
    app.until("the edit approved from the notification lands", || async {
        Ok(read(&first_ws.join("greeting.txt")) == "hello there\n")
    })
    .await?;
    let audit = home.reins(
        &["audit", "list", "--kind", "approval.approved", "--json"],
        &[],
    )?;
    assert!(
        audit.contains("from the notification"),
        "the audit log says where it was decided: {audit}"
    );
    app.until("a notification says what was done", || async {
        Ok(server
            .shown()
            .iter()
            .any(|n| n.summary.starts_with("Approved fs.edit greeting.txt")))
    })
    .await?;

    // Locked, a notification decides nothing, and says why. (A notification answers once: the
    // clicked one is gone, so each case below has its own card.)
    let ws = |n: &str| home.workspace(n, &[("greeting.txt", "go away\n")]);
    let (third_ws, fourth_ws) = (ws("three")?, ws("four")?);
    home.queue_plan(&plan("Greeting three"), &third_ws)?;
    home.queue_plan(&plan("Greeting four"), &fourth_ws)?;
    app.until("notifications for the third and fourth cards", || async {
        Ok(mine("Greeting three").is_some() && mine("Greeting four").is_some())
    })
    .await?;
    saver.lock(true);
    let third = mine("Greeting three").context("the third run's notification")?;
    server.invoke(third.id, "approve").await?;
    app.until("a notification says the locked screen refused", || async {
        Ok(server
            .shown()
            .iter()
            .any(|n| n.summary.contains("the screen is locked")))
    })
    .await?;
    assert_eq!(read(&third_ws.join("greeting.txt")), "go away\n");
    let waiting: Vec<serde_json::Value> =
        serde_json::from_str(&home.reins(&["approvals", "--json"], &[])?)?;
    assert_eq!(
        waiting.len(),
        3,
        "cards two, three and four wait: {waiting:?}"
    );

    // Unlocked again, Reject rejects with the notification's reason.
    saver.lock(false);
    let fourth = mine("Greeting four").context("the fourth run's notification")?;
    server.invoke(fourth.id, "reject").await?;
    app.until(
        "the card rejected from the notification is decided",
        || async {
            let all = home.reins(&["approvals", "--all", "--json"], &[])?;
            Ok(all.contains("rejected from the notification"))
        },
    )
    .await?;
    assert_eq!(read(&fourth_ws.join("greeting.txt")), "go away\n");

    // Exported, a review decided from a notification names it as the decider.
    let sink = reins_tests::otlp_sink::Sink::start()?;
    let settings = home.config().join("telemetry.toml");
    std::fs::write(
        &settings,
        format!(
            "endpoint = \"http://127.0.0.1:{}\"\nmetrics = false\n",
            sink.port
        ),
    )?;
    home.reins(&["otel", "flush"], &[])?;
    std::fs::remove_file(&settings)?;
    let reviews = sink.span_attributes()?;
    for decision in ["approved", "rejected"] {
        assert!(
            reviews.iter().any(|(_, a)| a
                .iter()
                .any(|kv| kv == "reins.review.decider=notification")
                && a.iter()
                    .any(|kv| kv == &format!("reins.review.decision={decision}"))),
            "a review {decision} from a notification: {reviews:?}"
        );
    }

    // A high-risk card's notification has no Approve or Reject.
    let fifth_ws = home.workspace("five", &[("README.md", "x\n")])?;
    home.queue_plan(HIGH_PLAN, &fifth_ws)?;
    app.until("a notification for the high-risk card", || async {
        Ok(mine("Unknown tool").is_some())
    })
    .await?;
    let high = mine("Unknown tool").context("the high-risk notification")?;
    assert!(high.summary.contains("(high risk)"), "{high:?}");
    assert_eq!(high.actions, ["default", "Review"], "{high:?}");
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

    // The tray lists the waiting card; picking it brings the same window back, at that approval.
    let labels = host.labels(&icon).await?;
    assert!(
        labels
            .first()
            .is_some_and(|l| l.contains("medium risk") && l.contains("fs.edit greeting.txt")),
        "the waiting card comes first in the tray's menu: {labels:?}"
    );
    assert!(
        labels.iter().any(|l| l.contains("Open Reins")),
        "{labels:?}"
    );
    host.click(&icon, "fs.edit greeting.txt").await?;
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
