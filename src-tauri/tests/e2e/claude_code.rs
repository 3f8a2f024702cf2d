//! Claude Code in a terminal, with Reins' hooks installed from the app's Settings: the real Claude
//! Code (installed by `scripts/agents`) asks Reins before its write, the card appears in the app
//! while Claude Code waits, and approving it there lets the write through.

use std::process::{Command, Stdio};

use reins_tests::mock_anthropic::{call, say, MockAnthropic};

use super::agents::installed;
use super::*;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn o_claude_code_hooks_installed_from_settings_put_its_write_on_a_card_in_the_app(
) -> Result<()> {
    let home = Home::new()?;
    let ws = std::fs::canonicalize(home.workspace("project", &[("README.md", "hello\n")])?)?;
    let notes = ws.join("NOTES.md");
    let claude = installed("claude")?;
    let bin = claude.parent().context("claude's folder")?;
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))?;
    let app = App::launch_with(&home, &[("PATH", path.as_os_str())]).await?;

    // Settings finds Claude Code and installs Reins' hooks in the project.
    app.view("settings").await?;
    app.until("Settings finds claude on PATH", || async {
        let found = app
            .find(By::Css("[data-testid='claude-found']"))
            .await?
            .text()
            .await?;
        Ok(found.starts_with("found"))
    })
    .await?;
    let radios = app
        .d()
        .find_all(By::Css("input[name='claude-scope']"))
        .await?;
    radios.get(1).context("the project choice")?.click().await?;
    app.fill(
        "input[aria-label='project folder']",
        &ws.display().to_string(),
    )
    .await?;
    app.until("the project's hooks are looked at", || async {
        Ok(app
            .find(By::Css("[data-testid='claude-hooks-state']"))
            .await?
            .text()
            .await?
            .contains("not installed"))
    })
    .await?;
    app.click("[data-testid='claude-install']").await?;
    app.until("the hooks are installed", || async {
        let state = app
            .find(By::Css("[data-testid='claude-hooks-state']"))
            .await?
            .text()
            .await?;
        Ok(state.starts_with("installed"))
    })
    .await?;
    app.d()
        .execute(
            "document.querySelector(\"[data-testid='claude-code']\").scrollIntoView()",
            Vec::new(),
        )
        .await?;
    app.screenshot("settings-claude-code").await?;
    let settings = read(&ws.join(".claude/settings.local.json"));
    assert!(
        settings.contains("hook claude-code") && settings.contains("PreToolUse"),
        "{settings}"
    );

    // Claude Code in the project, as the user runs it; its write waits on a card in the app.
    let mock = MockAnthropic::start(vec![
        call(
            "I will write the notes.",
            "Write",
            serde_json::json!({"file_path": notes.display().to_string(), "content": "from claude\n"}),
        ),
        say("Done: NOTES.md written."),
    ])?;
    let claude_home = home.root.path().join("claude-home");
    std::fs::create_dir_all(&claude_home)?;
    let mut child = Command::new(&claude)
        .args(["-p", "Write NOTES.md"])
        .current_dir(&ws)
        .env("HOME", &claude_home)
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("REINS_CONFIG_DIR", home.config())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    app.view("approvals").await?;
    app.until_within(
        "Claude Code's write is on a card",
        Duration::from_secs(120),
        || async {
            Ok(app
                .find(By::Css("[data-testid='approval-card']"))
                .await
                .is_ok())
        },
    )
    .await?;
    let agent = app
        .find(By::Css("[data-testid='card-agent']"))
        .await?
        .text()
        .await?;
    assert!(
        agent.contains("claude-code"),
        "the card names Claude Code: {agent:?}"
    );
    let add = app
        .find(By::Css(".diff-line[data-kind='add']"))
        .await?
        .text()
        .await?;
    assert!(
        add.contains("from claude"),
        "the card shows the diff: {add:?}"
    );
    assert!(
        child.try_wait()?.is_none(),
        "Claude Code waits for the decision"
    );
    assert!(!notes.exists(), "nothing is written before the decision");
    app.screenshot("claude-code-card").await?;
    app.key("a").await?;
    app.until("the write lands", || async { Ok(notes.exists()) })
        .await?;
    let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await??;
    assert!(
        out.status.success(),
        "claude: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read(&notes), "from claude\n");
    app.quit().await
}
