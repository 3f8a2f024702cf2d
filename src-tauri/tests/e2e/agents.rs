//! An external agent started from the app: Qwen Code (installed by `scripts/agents`), registered
//! with the CLI, chosen in New run, driven offline by the scripted model server. Its write stops
//! for review on a card naming the agent, and approving from the card lands the bytes.

use std::path::PathBuf;

use reins_tests::mock_llm::{self, MockLlm};

use super::*;

fn qwen() -> Result<PathBuf> {
    let dir = match std::env::var_os("REINS_AGENTS_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var("HOME")?).join(".cache/reins-agents"),
    };
    let bin = dir.join("node_modules/.bin/qwen");
    anyhow::ensure!(
        bin.exists(),
        "Qwen Code is not installed in {}: run scripts/agents (scripts/test does)",
        dir.display()
    );
    Ok(bin)
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn m_an_acp_run_started_in_the_app_stops_for_review_and_the_card_lands_the_write(
) -> Result<()> {
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("README.md", "hello\n")])?;
    let notes = ws.join("NOTES.md");
    let args =
        serde_json::json!({"file_path": notes.display().to_string(), "content": "from qwen\n"});
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "I will write the notes.",
            &[("call_1", "write_file", &args.to_string())],
        ),
        mock_llm::text("Done: NOTES.md written.", 8),
    ])?;
    let url = mock.base_url();
    let qwen = qwen()?;
    home.reins(
        &[
            "agents",
            "add",
            "qwen",
            "--",
            &qwen.display().to_string(),
            "--acp",
            "--auth-type",
            "openai",
            "--openai-base-url",
            &url,
            "--openai-api-key",
            "sk-test",
            "-m",
            "mock-model",
        ],
        &[0],
    )?;
    let app = App::launch(&home).await?;
    app.view("runs").await?;
    app.click("[data-testid='new-run']").await?;
    app.click("[data-testid='kind-acp']").await?;
    let option = app.find(By::Css("select[name='agent'] option")).await?;
    assert!(
        option.text().await?.starts_with("qwen"),
        "the dialog offers the registered agent"
    );
    app.fill("input[name='workspace']", &ws.display().to_string())
        .await?;
    app.fill("textarea[name='goal']", "Write NOTES.md").await?;
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
    let agent = app
        .find(By::Css("[data-testid='card-agent']"))
        .await?
        .text()
        .await?;
    assert!(
        agent.starts_with("qwen-code"),
        "the card names the agent: {agent:?}"
    );
    app.screenshot("acp-card").await?;
    let add = app
        .find(By::Css(".diff-line[data-kind='add']"))
        .await?
        .text()
        .await?;
    assert!(
        add.contains("from qwen"),
        "the card shows the diff: {add:?}"
    );
    assert!(!notes.exists(), "nothing is written before the decision");
    app.key("a").await?;
    app.until("the write lands", || async { Ok(notes.exists()) })
        .await?;
    assert_eq!(read(&notes), "from qwen\n");
    app.until("the run finishes", || async {
        let out = home.reins(&["ps", "--json"], &[0])?;
        Ok(out.contains("\"succeeded\""))
    })
    .await?;
    app.quit().await
}
