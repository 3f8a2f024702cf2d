//! A real external agent under Reins over the Agent Client Protocol: Qwen Code (installed from npm
//! by `scripts/agents`), driven offline by the scripted model server. Its write waits on a card
//! with the exact diff; an approval lands the bytes once, a rejection reaches the model; its own
//! classifier is never asked; a write outside the workspace is refused without a card; an agent
//! that dies is a suspended run with the reason.

use crate::common;

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{text, Cli};
use reins_tests::mock_llm::{self, MockLlm, Reply};

/// Where `scripts/agents` installs the pinned agents.
fn agents_bin() -> anyhow::Result<PathBuf> {
    let dir = match std::env::var_os("REINS_AGENTS_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var("HOME")?).join(".cache/reins-agents"),
    };
    let bin = dir.join("node_modules/.bin");
    anyhow::ensure!(
        bin.join("qwen").exists(),
        "Qwen Code is not installed in {}: run scripts/agents (scripts/test does)",
        dir.display()
    );
    Ok(bin)
}

/// Qwen Code's ACP command line, pointed at the scripted server.
fn qwen(mock: &MockLlm) -> anyhow::Result<String> {
    Ok(format!(
        "{} --acp --auth-type openai --openai-base-url {} --openai-api-key sk-test -m mock-model",
        agents_bin()?.join("qwen").display(),
        mock.base_url()
    ))
}

/// `reins run --acp` in the background, with the agent's own home in the sandbox.
fn start(cli: &Cli, mock: &MockLlm, goal: &str) -> anyhow::Result<Child> {
    let home = cli.tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    Ok(cli
        .strict_cmd()
        .env("HOME", &home)
        .args(["run", "--acp", goal, "--agent", &qwen(mock)?, "--workspace"])
        .arg(cli.ws())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?)
}

/// The first pending approval, waited for up to two minutes (Node starts slowly here).
fn card(cli: &Cli, child: &mut Child) -> anyhow::Result<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let list = cli.json(&["approvals"])?;
        if let Some(first) = list.as_array().and_then(|l| l.first()) {
            let id = first["id"].as_str().unwrap_or_default().to_owned();
            return cli.json(&["approval", "show", &id]);
        }
        if let Some(status) = child.try_wait()? {
            anyhow::bail!("reins exited ({status}) before any card");
        }
        anyhow::ensure!(Instant::now() < deadline, "no card after two minutes");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits for `reins` to exit; its exit code and output.
fn finish(mut child: Child) -> anyhow::Result<(Option<i32>, String)> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            child.kill()?;
            let out = child.wait_with_output()?;
            anyhow::bail!("reins still running after two minutes: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output()?;
    Ok((out.status.code(), text(&out)))
}

fn kinds(cli: &Cli) -> anyhow::Result<Vec<String>> {
    let page = cli.json(&["audit", "list", "--limit", "500"])?;
    Ok(page["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e["kind"].as_str().map(str::to_owned))
        .collect())
}

fn write_file(cli: &Cli, rel: &str, content: &str) -> Reply {
    let args = serde_json::json!({
        "file_path": cli.ws().join(rel).display().to_string(),
        "content": content,
    });
    mock_llm::calls(
        "I will write the note.",
        &[("call_1", "write_file", &args.to_string())],
    )
}

/// Whether any request the agent made asked the model to judge a command itself.
fn asked_its_own_classifier(mock: &MockLlm) -> bool {
    mock.seen()
        .iter()
        .any(|s| s.body.to_string().contains("respond_in_schema"))
}

#[test]
fn a_write_waits_on_a_card_with_the_diff_and_lands_once_approved() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        write_file(&cli, "NOTES.md", "hello from qwen\n"),
        mock_llm::text("Done: NOTES.md written.", 8),
    ])?;
    let mut child = start(&cli, &mock, "Write NOTES.md saying hello")?;
    let card = card(&cli, &mut child)?;
    assert_eq!(card["tool"], "agent.permission", "{card}");
    assert_eq!(card["risk"], "medium", "{card}");
    let preview = card["preview"].as_str().unwrap_or_default();
    assert!(preview.contains("+++ b/NOTES.md"), "{preview}");
    assert!(preview.contains("+hello from qwen"), "{preview}");
    assert!(
        !cli.ws().join("NOTES.md").exists(),
        "nothing is written before the review"
    );
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("Done: NOTES.md written."), "{said}");
    assert_eq!(cli.read("NOTES.md")?, "hello from qwen\n");
    let kinds = kinds(&cli)?;
    for kind in [
        "approval.approved",
        "grant.bound_to_permission",
        "intent.confirmed",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} missing: {kinds:?}");
    }
    // Reviewed once, at the permission; the write that followed ran under it, exactly once.
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    let steps = show["steps"].as_array().cloned().unwrap_or_default();
    let writes: Vec<_> = steps.iter().filter(|s| s["tool"] == "fs.write").collect();
    assert_eq!(writes.len(), 1, "{show}");
    assert_eq!(
        show["approvals"].as_array().map(Vec::len),
        Some(1),
        "{show}"
    );
    assert!(!asked_its_own_classifier(&mock));
    Ok(())
}

#[test]
fn a_rejected_write_leaves_the_file_alone_and_the_model_hears_the_reason() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        write_file(&cli, "NOTES.md", "hello from qwen\n"),
        mock_llm::text("Understood; I will not write it.", 8),
    ])?;
    let mut child = start(&cli, &mock, "Write NOTES.md saying hello")?;
    let card = card(&cli, &mut child)?;
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli
        .strict_cmd()
        .args(["reject", id, "--reason", "keep notes in the README"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert!(!cli.ws().join("NOTES.md").exists());
    let seen = mock.seen();
    assert!(
        seen[1..]
            .iter()
            .any(|s| s.body.to_string().contains("keep notes in the README")),
        "the reason reaches the model: {:?}",
        seen.iter().map(|s| s.body.to_string()).collect::<Vec<_>>()
    );
    assert!(!asked_its_own_classifier(&mock));
    Ok(())
}

#[test]
fn a_write_outside_the_workspace_is_refused_without_a_card() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let outside = cli.tmp.path().join("outside.txt");
    let args = serde_json::json!({
        "file_path": outside.display().to_string(),
        "content": "escaped\n",
    });
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Writing it there.",
            &[("call_1", "write_file", &args.to_string())],
        ),
        mock_llm::text("I could not write outside the workspace.", 8),
    ])?;
    let child = start(&cli, &mock, "Write a file outside")?;
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert!(!outside.exists());
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(0), "no card: {all}");
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["steps"][0]["status"], "invalid", "{show}");
    Ok(())
}

#[test]
fn a_write_to_a_protected_path_is_high_risk() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![write_file(&cli, ".env", "TOKEN=x\n")])?;
    let mut child = start(&cli, &mock, "Set the token")?;
    let card = card(&cli, &mut child)?;
    assert_eq!(card["risk"], "high", "{card}");
    child.kill()?;
    child.wait()?;
    Ok(())
}

#[test]
fn an_agent_killed_mid_turn_suspends_the_run_with_the_reason() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    // The model answers nothing: the agent waits on it, and is killed meanwhile.
    let mock = MockLlm::start(vec![Reply::Stall { chunks: Vec::new() }])?;
    let child = start(&cli, &mock, "Think for a long time")?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while mock.count() == 0 {
        anyhow::ensure!(Instant::now() < deadline, "the agent never asked the model");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The agent's Node processes are the only ones started as `node …` that name this server.
    let pattern = format!("^[^ ]*node .*{}", mock.base_url());
    let killed = std::process::Command::new("pkill")
        .args(["-KILL", "-f", &pattern])
        .status()?;
    assert!(killed.success(), "the agent process was found");
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(3), "{said}");
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended", "{show}");
    let reason = show["run"]["lastError"].as_str().unwrap_or_default();
    assert!(reason.contains("the agent stopped"), "{reason}");
    Ok(())
}
