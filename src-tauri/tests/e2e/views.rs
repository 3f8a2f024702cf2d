//! The other views as a person uses them: the first launch and every view, memory, and exporting
//! the audit log through the native save dialog.

use super::*;

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
    let ws = home.workspace("ws", &[("README.md", "hello\n")])?;
    let out = home.root.path().join("exported-audit.jsonl");
    let app = App::launch(&home).await?;
    home.queue_plan(WRITE_PLAN, &ws)?;
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
    // Each event reads as a sentence, the run by its name.
    let sentences = || async {
        let mut said = Vec::new();
        for s in app
            .d()
            .find_all(By::Css("[data-testid='audit-sentence']"))
            .await?
        {
            // The cell's whole sentence (its text on screen may be cut with an ellipsis).
            said.push(s.attr("title").await?.unwrap_or_default());
        }
        Ok::<_, anyhow::Error>(said)
    };
    app.until("the run's review is in the log", || async {
        let said = sentences().await?;
        Ok(said
            .iter()
            .any(|s| s.starts_with("Step 1 waits for review: fs.write on NOTES.md")))
    })
    .await?;
    let said = sentences().await?;
    assert!(
        said.iter()
            .any(|s| s == "Fact style/indent added by you (version 1)"),
        "{said:#?}"
    );
    assert!(
        !said.iter().any(|s| s.starts_with('{')),
        "no raw JSON: {said:#?}"
    );
    // The raw payload opens on a click.
    for cell in app
        .d()
        .find_all(By::Css("[data-testid='audit-sentence']"))
        .await?
    {
        let said = cell.attr("title").await?.unwrap_or_default();
        if said.starts_with("Step 1 waits for review") {
            cell.click().await?;
            break;
        }
    }
    let payload = app
        .find(By::Css("[data-testid='audit-payload']"))
        .await?
        .text()
        .await?;
    assert!(payload.contains("\"risk\": \"medium\""), "{payload}");
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
