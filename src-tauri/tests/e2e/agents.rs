//! External agents started from the app: Qwen Code, then opencode (both installed by
//! `scripts/agents`), registered with the CLI, chosen in New run, driven offline by the scripted
//! model server. Each one's write stops for review on a card naming the agent, and approving from
//! the card lands the bytes.

use std::path::PathBuf;

use reins_tests::mock_llm::{self, MockLlm};

use super::*;

/// An agent's command, as `scripts/agents` installs it.
pub(crate) fn installed(program: &str) -> Result<PathBuf> {
    let dir = match std::env::var_os("REINS_AGENTS_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var("HOME")?).join(".cache/reins-agents"),
    };
    let bin = dir.join("node_modules/.bin").join(program);
    anyhow::ensure!(
        bin.exists(),
        "{program} is not installed in {}: run scripts/agents (scripts/test does)",
        dir.display()
    );
    Ok(bin)
}

/// How long a run may take to reach its first card when it starts a Node agent or tool server.
const AGENT_START: Duration = Duration::from_secs(120);

/// Starts a run of the registered agent `name` from New run, waits for its card, checks the card
/// names `vendor` and shows `text` added, saves `shot`, and approves with `a`.
async fn run_and_approve(
    app: &App,
    home: &Home,
    ws: &std::path::Path,
    name: &str,
    vendor: &str,
    text: &str,
    shot: &str,
) -> Result<()> {
    app.view("runs").await?;
    app.click("[data-testid='new-run']").await?;
    app.click("[data-testid='kind-acp']").await?;
    // The registered agents load after the dialog opens.
    app.find(By::Css("select[name='agent'] option")).await?;
    let options = app
        .d()
        .find_all(By::Css("select[name='agent'] option"))
        .await?;
    let mut offered = Vec::new();
    for o in &options {
        offered.push(o.text().await?);
    }
    let pick = offered
        .iter()
        .position(|o| o.starts_with(name))
        .with_context(|| format!("the dialog offers {name}: {offered:?}"))?;
    options[pick].click().await?;
    app.fill("input[name='workspace']", &ws.display().to_string())
        .await?;
    app.fill("textarea[name='goal']", "Write NOTES.md").await?;
    app.click("[data-testid='start-run']").await?;
    app.find(By::Css("[data-testid='run-detail']")).await?;
    app.until_within("the run waits for a review", AGENT_START, || async {
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
        agent.starts_with(vendor),
        "the card names the agent: {agent:?}"
    );
    app.screenshot(shot).await?;
    let add = app
        .find(By::Css(".diff-line[data-kind='add']"))
        .await?
        .text()
        .await?;
    assert!(add.contains(text), "the card shows the diff: {add:?}");
    let notes = ws.join("NOTES.md");
    assert!(!notes.exists(), "nothing is written before the decision");
    app.key("a").await?;
    // The file can exist before its bytes are in it: wait for the bytes.
    let want = format!("{text}\n");
    app.until("the write lands", || async { Ok(read(&notes) == want) })
        .await?;
    app.until("the run finishes", || async {
        let out = home.reins(&["ps", "--json"], &[0])?;
        let runs: serde_json::Value = serde_json::from_str(&out)?;
        Ok(runs
            .as_array()
            .is_some_and(|l| l.iter().all(|r| r["state"] == "succeeded")))
    })
    .await
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
    let qwen = installed("qwen")?;
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
    // opencode reads its provider from its config file; `env` hands it the file and keeps it
    // from fetching its model list and plugins offline (Reins still knows it is opencode and makes it ask).
    let config = home.root.path().join("opencode.json");
    std::fs::write(
        &config,
        serde_json::json!({
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": url, "apiKey": "sk-test"},
                "models": {"mock-model": {"name": "Mock model"}},
            }},
            "model": "mock/mock-model",
            "share": "disabled",
            "autoupdate": false,
        })
        .to_string(),
    )?;
    // Its own config directory, in the sandbox, as a finished first-start install of its plugin
    // types leaves it: otherwise its first turn waits on the npm registry.
    let xdg = home.root.path().join("xdg");
    std::fs::create_dir_all(xdg.join("opencode/node_modules"))?;
    std::fs::write(
        xdg.join("opencode/package-lock.json"),
        r#"{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}"#,
    )?;
    let opencode = installed("opencode")?;
    home.reins(
        &[
            "agents",
            "add",
            "opencode",
            "--",
            "env",
            &format!("OPENCODE_CONFIG={}", config.display()),
            &format!("XDG_CONFIG_HOME={}", xdg.display()),
            "OPENCODE_DISABLE_MODELS_FETCH=1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
            "OPENCODE_DISABLE_AUTOUPDATE=1",
            &opencode.display().to_string(),
            "acp",
        ],
        &[0],
    )?;
    let app = App::launch(&home).await?;
    run_and_approve(
        &app,
        &home,
        &ws,
        "qwen",
        "qwen-code",
        "from qwen",
        "acp-card",
    )
    .await?;
    // The same folder, now with opencode: the card shows its diff against what Qwen wrote.
    std::fs::remove_file(ws.join("NOTES.md"))?;
    let args =
        serde_json::json!({"filePath": notes.display().to_string(), "content": "from opencode\n"});
    mock.push(mock_llm::calls(
        "I will write the notes.",
        &[("call_2", "write", &args.to_string())],
    ));
    mock.push(mock_llm::text("Done: NOTES.md written.", 8));
    run_and_approve(
        &app,
        &home,
        &ws,
        "opencode",
        "OpenCode",
        "from opencode",
        "acp-card-opencode",
    )
    .await?;
    // opencode's run reads as its words, rendered as a model's are, between its steps.
    let runs: serde_json::Value = serde_json::from_str(&home.reins(&["ps", "--json"], &[0])?)?;
    let mut opencode_run = None;
    for r in runs.as_array().into_iter().flatten() {
        let id = r["id"].as_str().unwrap_or_default();
        let show: serde_json::Value =
            serde_json::from_str(&home.reins(&["show", id, "--json"], &[0])?)?;
        if show["run"]["compat"]["externalAgent"]["name"] == "OpenCode" {
            opencode_run = Some(id.to_owned());
        }
    }
    let opencode_run = opencode_run.context("the opencode run is listed")?;
    app.view("runs").await?;
    app.click(&format!(
        "[data-testid='run-row'][data-run='{opencode_run}'] button.run-name"
    ))
    .await?;
    app.until("its words are on the timeline", || async {
        Ok(app
            .d()
            .find_all(By::Css(
                "[data-testid='agent-said'] [data-testid='model-text']",
            ))
            .await?
            .len()
            == 2)
    })
    .await?;
    let mut said = Vec::new();
    for t in app
        .d()
        .find_all(By::Css(
            "[data-testid='agent-said'] [data-testid='model-text']",
        ))
        .await?
    {
        said.push(t.text().await?);
    }
    assert_eq!(said, ["I will write the notes.", "Done: NOTES.md written."]);
    // In the order it happened: the words, then the write they led to; the closing words last.
    let mut items = Vec::new();
    for li in app
        .d()
        .find_all(By::Css("[data-testid='timeline'] > li"))
        .await?
    {
        let kind = li.attr("data-testid").await?.unwrap_or_default();
        let head = li.find(By::Css(".tool")).await?.text().await?;
        items.push(format!("{kind}: {head}"));
    }
    let said = items
        .iter()
        .position(|i| i.starts_with("agent-said"))
        .context("a message on the timeline")?;
    assert!(
        items
            .get(said + 1)
            .is_some_and(|i| i == "step: agent.permission" || i == "step: fs.write"),
        "its words come just before the write they led to: {items:?}"
    );
    assert!(
        items.last().is_some_and(|i| i.starts_with("agent-said")),
        "its closing words come last: {items:?}"
    );
    app.screenshot("run-detail-acp").await?;
    app.quit().await
}

/// The filesystem MCP server, registered with the CLI, chosen in New run for an LLM run: its
/// `write_file` card renders the server, the tool and the exact arguments, and approving from the
/// card lands the file.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn n_an_llm_run_with_an_mcp_server_shows_the_calls_arguments_and_lands_it() -> Result<()> {
    let home = Home::new()?;
    let ws = home.workspace("ws", &[("README.md", "hello\n")])?;
    let ws = std::fs::canonicalize(ws)?;
    let notes = ws.join("MCP.md");
    let args = serde_json::json!({"path": notes.display().to_string(), "content": "from mcp\n"});
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Writing it with the filesystem server.",
            &[("w1", "fs__write_file", &args.to_string())],
        ),
        mock_llm::text("Done: MCP.md written.", 8),
    ])?;
    let fs = installed("mcp-server-filesystem")?;
    home.reins(
        &[
            "mcp",
            "add",
            "fs",
            "--",
            &fs.display().to_string(),
            "{workspace}",
        ],
        &[0],
    )?;
    let app = App::launch(&home).await?;
    app.view("settings").await?;
    app.fill("input[name='base-url']", &mock.base_url()).await?;
    app.fill("input[name='model']", "mock-model").await?;
    app.click("form.grid-form button.primary").await?;
    app.find(By::Css(".notice")).await?;
    // Settings says the server answers and offers the model (its GET /models is no model call).
    app.until("the model server is checked", || async {
        Ok(app
            .find(By::Css("[data-testid='model-server-text']"))
            .await?
            .text()
            .await?
            .contains("answers and offers mock-model"))
    })
    .await?;
    let listed = app
        .find(By::Css("[data-testid='mcp-servers'] table"))
        .await?
        .text()
        .await?;
    assert!(
        listed.contains("fs") && listed.contains("stdio"),
        "Settings lists it: {listed}"
    );

    app.view("runs").await?;
    app.click("[data-testid='new-run']").await?;
    app.click("[data-testid='kind-llm']").await?;
    app.click("[data-testid='mcp-fs']").await?;
    app.fill("input[name='workspace']", &ws.display().to_string())
        .await?;
    app.fill("textarea[name='goal']", "Write MCP.md").await?;
    app.click("[data-testid='start-run']").await?;
    app.find(By::Css("[data-testid='run-detail']")).await?;
    app.until_within("the run waits for a review", AGENT_START, || async {
        let state = app
            .find(By::Css("[data-testid='run-state']"))
            .await?
            .text()
            .await?;
        Ok(state == "awaiting approval")
    })
    .await?;
    app.view("approvals").await?;
    let card = app
        .find(By::Css("[data-testid='approval-card']"))
        .await?
        .text()
        .await?;
    for want in [
        "MCP server `fs` · tool `write_file`",
        "the server claims (hints, not checked): not read-only, destructive",
        "\"content\": \"from mcp\\n\"",
        &notes.display().to_string(),
    ] {
        assert!(card.contains(want), "{want:?} on the card:\n{card}");
    }
    app.screenshot("mcp-card").await?;
    assert!(!notes.exists(), "nothing is written before the decision");
    app.key("a").await?;
    // The server creates the file, then writes it: wait for the bytes, not the name.
    app.until("the write lands", || async {
        Ok(read(&notes) == "from mcp\n")
    })
    .await?;

    // The run reads as the model's words, its call as a chip linked to its step: no JSON.
    app.view("runs").await?;
    app.click("[data-testid='run-row'] button.run-name").await?;
    app.until("both model turns are shown", || async {
        Ok(app
            .d()
            .find_all(By::Css("[data-testid='model-text']"))
            .await?
            .len()
            == 2)
    })
    .await?;
    assert_eq!(mock.count(), 2, "exactly two model requests");
    let mut said = Vec::new();
    for t in app
        .d()
        .find_all(By::Css("[data-testid='model-text']"))
        .await?
    {
        said.push(t.text().await?);
    }
    assert_eq!(
        said,
        [
            "Writing it with the filesystem server.",
            "Done: MCP.md written."
        ]
    );
    let chip = app.find(By::Css("[data-testid='call-chip']")).await?;
    let chip_text = chip.text().await?;
    assert!(chip_text.starts_with("fs__write_file"), "{chip_text}");
    assert_eq!(chip.attr("data-step").await?.as_deref(), Some("2"));
    let timeline = app
        .find(By::Css("[data-testid='timeline']"))
        .await?
        .text()
        .await?;
    assert!(!timeline.contains("\"reply\""), "no raw JSON: {timeline}");
    app.screenshot("run-detail-llm").await?;
    app.quit().await
}
