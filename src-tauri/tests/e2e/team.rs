//! The app on a team database (a throwaway PostgreSQL from Debian's binaries): runs of two
//! "machines" in one inbox, the runs list says where each started, and the tray counts the whole
//! team's approvals or, by this machine's choice, only its own.

use anyhow::{Context, Result};
use thirtyfour::prelude::*;

use crate::harness::{App, Home};
use crate::{tray, EDIT_PLAN};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn m_on_a_team_database_the_tray_covers_the_team_or_only_this_machine() -> Result<()> {
    let host = tray::Tray::serve().await?;
    let url = reins_testpg::Cluster::shared()?.database("e2e_team")?;
    let laptop = Home::on_team(&url, "laptop")?;
    let build_box = Home::on_team(&url, "build-box")?;

    // The build box queues a run and its worker carries it to the review.
    let there = build_box.workspace("there", &[("greeting.txt", "go away\n")])?;
    let theirs = build_box.queue_plan(
        &EDIT_PLAN.replace("Fix the greeting", "Build box greeting"),
        &there,
    )?;
    build_box.reins(&["worker", "--once"], &[])?;

    let app = App::launch(&laptop).await?;
    let pid = App::pid(&laptop).context("the app's pid")?;
    let icon = host.wait_for_item(pid).await?;
    // A run of the laptop's own, carried to its review by the app's worker.
    let here = laptop.workspace("here", &[("greeting.txt", "go away\n")])?;
    let mine = laptop.queue_plan(
        &EDIT_PLAN.replace("Fix the greeting", "Laptop greeting"),
        &here,
    )?;
    app.until("the tray counts the team's two approvals", || async {
        Ok(host.label(&icon).await? == "2")
    })
    .await?;

    // The runs list says where each run started.
    app.view("runs").await?;
    app.until("the runs list names both machines", || async {
        let mut machines = Vec::new();
        for e in app
            .d()
            .find_all(By::Css("[data-testid='run-machine']"))
            .await?
        {
            machines.push(e.text().await?);
        }
        machines.sort();
        Ok(machines == ["on build-box", "on laptop"])
    })
    .await?;

    // Settings → Team database: only this machine's runs.
    app.view("settings").await?;
    app.until("the panel says which database the app is on", || async {
        let now = app
            .find(By::Css("[data-testid='team-now']"))
            .await?
            .text()
            .await?;
        Ok(now.contains("Connected to postgres://") && now.contains("hearing the team's changes"))
    })
    .await?;
    app.click("[data-testid='team-alerts'] input[value='mine']")
        .await?;
    app.until("the tray counts only the laptop's approval", || async {
        Ok(host.label(&icon).await? == "1")
    })
    .await?;
    let saved = std::fs::read_to_string(laptop.config().join("alerts.toml"))?;
    assert!(saved.contains("scope = \"mine\""), "{saved}");
    app.d()
        .execute(
            "document.querySelector(\"[data-testid='team-database']\").scrollIntoView()",
            Vec::new(),
        )
        .await?;
    app.screenshot("team-alerts").await?;

    // The inbox still holds the whole team's: the build box's review is decided here, by a
    // person on the laptop, and the build box carries the edit out.
    app.view("approvals").await?;
    app.until("the inbox holds the whole team's two", || async {
        Ok(app
            .find(By::Css("[data-testid='pending-count']"))
            .await?
            .text()
            .await?
            == "2")
    })
    .await?;
    let pending: serde_json::Value =
        serde_json::from_str(&laptop.reins(&["approvals", "--json"], &[])?)?;
    let ids: Vec<(String, String)> = pending
        .as_array()
        .context("a list of approvals")?
        .iter()
        .map(|a| {
            (
                a["runId"].as_str().unwrap_or("").to_owned(),
                a["id"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(ids.len(), 2, "{pending}");
    let their_card = ids
        .iter()
        .find(|(run, _)| *run == theirs)
        .map(|(_, id)| id.clone())
        .context("the build box's approval")?;
    laptop.reins(&["approve", &their_card], &[])?;
    build_box.reins(&["worker", "--once"], &[])?;
    assert_eq!(
        std::fs::read_to_string(there.join("greeting.txt"))?,
        "hello there\n"
    );
    // Carried out on the build box, never by the laptop's worker: the workspace is not its.
    let shown: serde_json::Value =
        serde_json::from_str(&laptop.reins(&["show", &theirs, "--json"], &[])?)?;
    let workers: Vec<&str> = shown["attempts"]
        .as_array()
        .context("the run's attempts")?
        .iter()
        .filter_map(|a| a["worker"].as_str())
        .collect();
    assert!(
        !workers.is_empty() && workers.iter().all(|w| w.starts_with("build-box:")),
        "{workers:?}"
    );
    assert_eq!(shown["run"]["state"], "succeeded", "{shown}");
    app.until(
        "the tray still counts only the laptop's approval",
        || async { Ok(host.label(&icon).await? == "1") },
    )
    .await?;
    assert!(ids.iter().any(|(run, _)| *run == mine), "{pending}");
    app.quit().await
}
