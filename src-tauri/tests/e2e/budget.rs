//! A run at its budget in the real window: the run's detail shows what it spent against each
//! limit, and the card that asks; "Allow … more" carries it on, audited as the desktop user's.

use super::*;

const THREE_READS: &str = r#"
name = "Read the notes three times"
goal = "Read the notes"

[[steps]]
tool = "fs.read"
args = { path = "notes.txt" }

[[steps]]
tool = "fs.read"
args = { path = "notes.txt" }

[[steps]]
tool = "fs.read"
args = { path = "notes.txt" }
"#;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn m_a_run_at_its_budget_shows_its_spending_and_allow_more_carries_it_on() -> Result<()> {
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("notes.txt", "rotate daily\n")])?;
    let plan = home.root.path().join("reads.toml");
    std::fs::write(&plan, THREE_READS)?;
    let out = home.reins(
        &[
            "run",
            "--plan",
            &plan.display().to_string(),
            "--workspace",
            &ws.display().to_string(),
            "--budget-steps",
            "2",
            "--budget-tokens",
            "50000",
            "--budget-minutes",
            "30",
        ],
        &[3],
    )?;
    let run = out
        .split(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
        .find(|w| w.len() == 36)
        .map(str::to_owned)
        .context(format!("no run id in {out:?}"))?;
    let app = App::launch(&home).await?;
    app.view("runs").await?;
    app.click(&format!(
        "[data-testid='run-row'][data-run='{run}'] button.run-name"
    ))
    .await?;
    let card = app
        .find(By::Css("[data-testid='budget-card']"))
        .await?
        .text()
        .await?;
    assert!(
        card.contains("It spent 2 steps of a budget of 2 steps"),
        "{card}"
    );
    let steps = app
        .find(By::Css("[data-testid='budget-steps']"))
        .await?
        .text()
        .await?;
    assert!(steps.contains("2 steps of 2 steps (100%)"), "{steps}");
    app.screenshot("budget").await?;

    app.click("[data-testid='budget-card'] button.primary")
        .await?;
    app.until("the run finishes within its new budget", || async {
        let show: serde_json::Value =
            serde_json::from_str(&home.reins(&["--json", "show", &run], &[])?)?;
        Ok(show["run"]["state"] == "succeeded")
    })
    .await?;
    let audit = home.reins(&["audit", "list", "--kind", "budget.raised"], &[])?;
    assert!(
        audit.contains("(desktop) allowed the run more steps: up to 4 steps"),
        "{audit}"
    );
    app.quit().await
}
