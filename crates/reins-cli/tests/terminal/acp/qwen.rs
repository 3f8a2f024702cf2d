//! Qwen Code (`qwen --acp`, mode `default`): it asks permission before each write and command,
//! then asks Reins to write. Its write waits on a card with the exact diff; an approval lands the
//! bytes once, bound to the permission; a rejection reaches the model; its own classifier is never
//! asked; a write outside the workspace is refused without a card; an agent that dies is a
//! suspended run with the reason.

use std::time::{Duration, Instant};

use super::common::Cli;
use super::{card, finish, start, Vendor};
use reins_tests::mock_llm::{self, MockLlm, Reply};

const QWEN: Vendor = Vendor::Qwen;

#[test]
fn a_write_waits_on_a_card_with_the_diff_and_lands_once_approved() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        QWEN.write(&cli, "NOTES.md", "hello from qwen\n"),
        mock_llm::text("Done: NOTES.md written.", 8),
    ])?;
    let mut child = start(&cli, QWEN, &mock, "Write NOTES.md saying hello")?;
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
    let said =
        super::approve_and_check_the_write(&cli, child, &card, "NOTES.md", "hello from qwen\n")?;
    assert!(said.contains("Done: NOTES.md written."), "{said}");
    let kinds = super::kinds(&cli)?;
    for kind in ["grant.bound_to_permission", "intent.confirmed"] {
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
    // Who the agent is went into the run's record.
    let agent = &show["run"]["compat"]["externalAgent"];
    assert!(
        agent["name"].as_str().is_some_and(|n| !n.is_empty()),
        "{show}"
    );
    assert_eq!(agent["mode"], "default", "{show}");
    assert!(!super::asked_its_own_classifier(&mock));
    Ok(())
}

#[test]
fn a_rejected_write_leaves_the_file_alone_and_the_model_hears_the_reason() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        QWEN.write(&cli, "NOTES.md", "hello from qwen\n"),
        mock_llm::text("Understood; I will not write it.", 8),
    ])?;
    super::reject_and_check_the_reason_is_heard(&cli, QWEN, &mock, "NOTES.md")
}

#[test]
fn its_commands_are_judged_by_reins() -> anyhow::Result<()> {
    super::commands_are_judged_by_reins(QWEN)
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
    let child = start(&cli, QWEN, &mock, "Write a file outside")?;
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert!(!outside.exists());
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(0), "no card: {all}");
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    let steps = show["steps"].as_array().cloned().unwrap_or_default();
    let asked = steps.iter().find(|s| s["tool"] != "agent.prompt");
    assert_eq!(
        asked.map(|s| s["status"].clone()),
        Some("invalid".into()),
        "{show}"
    );
    Ok(())
}

#[test]
fn a_write_to_a_protected_path_is_high_risk() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![QWEN.write(&cli, ".env", "TOKEN=x\n")])?;
    let mut child = start(&cli, QWEN, &mock, "Set the token")?;
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
    let child = start(&cli, QWEN, &mock, "Think for a long time")?;
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

/// `reins` with the agent's home in the sandbox, every effect it runs counted in `effects`, and
/// `fault` (a fault point) armed if given.
fn counted(cli: &Cli, effects: &std::path::Path, fault: Option<&str>) -> std::process::Command {
    let mut c = cli.strict_cmd();
    c.env("HOME", cli.tmp.path().join("home"))
        .env("REINS_EFFECT_LOG", effects);
    if let Some(point) = fault {
        c.env("REINS_FAULT", point);
    }
    c
}

/// `reins run --acp` of Qwen Code in the background, counted (see `counted`).
fn spawn_counted(
    cli: &Cli,
    mock: &MockLlm,
    effects: &std::path::Path,
    fault: Option<&str>,
) -> anyhow::Result<std::process::Child> {
    let agent = QWEN.agent(cli, mock)?;
    Ok(counted(cli, effects, fault)
        .args([
            "run",
            "--acp",
            "Write NOTES.md",
            "--agent",
            &agent,
            "--workspace",
        ])
        .arg(cli.ws())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?)
}

#[test]
fn reins_killed_while_a_card_waits_writes_once_after_the_restart_without_a_second_review(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let mock = MockLlm::start(vec![
        QWEN.write(&cli, "NOTES.md", "hello\n"),
        // Restarted, the agent asks again for what it never heard was granted.
        QWEN.write(&cli, "NOTES.md", "hello\n"),
        mock_llm::text("Done: NOTES.md written.", 8),
    ])?;
    let mut child = spawn_counted(&cli, &mock, &effects, None)?;
    let card = card(&cli, &mut child)?;
    child.kill()?; // SIGKILL: no cleanup, the card stays and the agent loses its client
    child.wait()?;
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", super::text(&out));
    let out = super::bounded(counted(&cli, &effects, None).args(["worker", "--once"]))?;
    let mut worked = super::text(&out);
    assert!(out.status.success(), "{worked}");
    let run = cli.only_run()?;
    worked.push_str(&super::text(
        &cli.strict_cmd().args(["show", &run]).output()?,
    ));
    assert_eq!(
        cli.read("NOTES.md").ok().as_deref(),
        Some("hello\n"),
        "{worked}"
    );
    let ran = std::fs::read_to_string(&effects)?;
    assert_eq!(ran.lines().count(), 1, "written exactly once: {ran}");
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(
        all.as_array().map(Vec::len),
        Some(1),
        "reviewed once: {all}"
    );
    let run = cli.only_run()?;
    let show = cli.json(&["show", &run])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    let bound = super::kinds(&cli)?
        .iter()
        .filter(|k| *k == "grant.bound_to_permission")
        .count();
    assert_eq!(
        bound, 2,
        "the permission asked again and the write both ran under the one review"
    );
    Ok(())
}

#[test]
fn reins_killed_right_after_an_approved_write_never_writes_it_again() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    // Restarted, the model asks for the same write again (Qwen Code sees the file already holds
    // it and does not ask; an agent that does ask is confirmed from the journal: see lifecycle.rs).
    let mock = MockLlm::start(vec![
        QWEN.write(&cli, "NOTES.md", "hello\n"),
        QWEN.write(&cli, "NOTES.md", "hello\n"),
        QWEN.write(&cli, "NOTES.md", "hello\n"),
        mock_llm::text("Done: NOTES.md written.", 8),
    ])?;
    let mut child = spawn_counted(&cli, &mock, &effects, Some("after_confirm"))?;
    let card = card(&cli, &mut child)?;
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", super::text(&out));
    // It carries the write out, confirms it, and dies before the agent hears.
    let (code, said) = finish(child)?;
    assert_ne!(code, Some(0), "{said}");
    assert!(said.contains("after_confirm"), "{said}");
    let out = super::bounded(counted(&cli, &effects, None).args(["worker", "--once"]))?;
    assert!(out.status.success(), "{}", super::text(&out));
    assert_eq!(cli.read("NOTES.md")?, "hello\n");
    let ran = std::fs::read_to_string(&effects)?;
    assert_eq!(ran.lines().count(), 1, "written exactly once: {ran}");
    let run = cli.only_run()?;
    let show = cli.json(&["show", &run])?;
    // It goes on, with no second card.
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(
        all.as_array().map(Vec::len),
        Some(1),
        "reviewed once: {all}"
    );
    Ok(())
}

#[test]
fn a_lasting_approval_on_its_card_is_an_ordinary_grant_that_covers_its_next_write(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        QWEN.write(&cli, "NOTES.md", "one\n"),
        QWEN.write(&cli, "TODO.md", "two\n"),
        mock_llm::text("Both written.", 8),
    ])?;
    let mut child = start(&cli, QWEN, &mock, "Write the notes and the to-do list")?;
    let card = card(&cli, &mut child)?;
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli
        .strict_cmd()
        .args(["approve", id, "--scope", "run", "--pattern", "*.md"])
        .output()?;
    assert!(out.status.success(), "{}", super::text(&out));
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(cli.read("NOTES.md")?, "one\n");
    assert_eq!(cli.read("TODO.md")?, "two\n", "{said}");
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(1), "one card: {all}");
    // Granted as the write the agent reported: Reins' own grant, listed and revocable, never the
    // agent's "always allow".
    let grants = cli.json(&["grants"])?;
    let grants = grants.as_array().cloned().unwrap_or_default();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0]["tool"], "fs.write", "{grants:?}");
    assert_eq!(grants[0]["pattern"], "*.md", "{grants:?}");
    assert!(grants[0]["uses"].as_i64().unwrap_or(0) >= 1, "{grants:?}");
    let kinds = super::kinds(&cli)?;
    assert!(kinds.iter().any(|k| k == "grant.used"), "{kinds:?}");
    Ok(())
}

#[test]
fn a_pause_mid_turn_ends_it_and_resume_loads_its_session_and_goes_on() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    // The model answers nothing at first: the agent is mid-turn, waiting on it.
    let mock = MockLlm::start(vec![
        Reply::Stall { chunks: Vec::new() },
        mock_llm::text("Carried on after the pause.", 8),
    ])?;
    let child = start(&cli, QWEN, &mock, "Think about log rotation")?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while mock.count() == 0 {
        anyhow::ensure!(Instant::now() < deadline, "the agent never asked the model");
        std::thread::sleep(Duration::from_millis(100));
    }
    let id = cli.only_run()?;
    let out = cli.strict_cmd().args(["pause", &id]).output()?;
    assert!(out.status.success(), "{}", super::text(&out));
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(3), "paused: {said}");
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "paused", "{show}");
    let pattern = format!("^[^ ]*node .*{}", mock.base_url());
    let left = std::process::Command::new("pgrep")
        .args(["-f", &pattern])
        .output()?;
    assert!(
        !left.status.success(),
        "the agent's process ended with the pause"
    );

    let out = cli.strict_cmd().args(["resume", &id]).output()?;
    assert!(out.status.success(), "{}", super::text(&out));
    let out = super::bounded(super::agent_cmd(&cli).args(["worker", "--once"]))?;
    let worked = super::text(&out);
    assert!(out.status.success(), "{worked}");
    // Its session was loaded (the old turn replayed to Reins is not news) and it went on.
    assert!(
        worked.contains("succeeded: Carried on after the pause."),
        "{worked}"
    );
    let seen = mock.seen();
    let last = seen.last().map(|s| s.body.to_string()).unwrap_or_default();
    assert!(
        last.contains("turn was cancelled"),
        "the agent heard why: {last}"
    );
    Ok(())
}

/// Reins' memory server, handed to the agent in its session: Qwen Code calls its
/// `memory_recall`, Reins recognises its own read-only tool in the permission request and allows it
/// without a card, and the fact reaches the model; the audit log names the run and the agent.
#[test]
fn qwen_recalls_a_profile_fact_from_reins_memory_server() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let out = cli
        .strict_cmd()
        .args([
            "memory",
            "add",
            "--category",
            "preference",
            "--key",
            "editor",
        ])
        .args(["--value", "uses vim keybindings"])
        .output()?;
    assert!(out.status.success(), "{}", super::text(&out));
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Let me recall.",
            &[(
                "call_m1",
                "mcp__reins-memory__memory_recall",
                r#"{"query":"editor"}"#,
            )],
        ),
        mock_llm::text("You use vim keybindings.", 3),
    ])?;
    let child = start(&cli, Vendor::Qwen, &mock, "which editor keys do I use?")?;
    let (code, shown) = finish(child)?;
    assert_eq!(code, Some(0), "{shown}");
    // Qwen Code sends a tool result as a list of parts.
    let messages = mock.seen()[1].body["messages"].clone();
    let recalled = messages
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(
        recalled.contains("preference.editor: uses vim keybindings"),
        "{recalled}"
    );
    assert!(
        cli.json(&["approvals", "--all"])?
            .as_array()
            .is_some_and(Vec::is_empty),
        "no card"
    );

    let id = cli.only_run()?;
    let served = cli.json(&["audit", "list", "--kind", "memory.served"])?;
    let event = &served["events"][0];
    assert_eq!(event["runId"], id.as_str(), "{served}");
    assert_eq!(event["payload"]["tool"], "memory_recall", "{served}");
    assert_eq!(event["payload"]["agent"], "qwen-code 0.24.4", "{served}");
    let fact = event["payload"]["facts"][0]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!fact.is_empty(), "{served}");
    let context = super::text(&cli.strict_cmd().args(["show", &id, "--context"]).output()?);
    assert!(
        context.contains("preference.editor"),
        "the brief's manifest has the fact: {context}"
    );
    Ok(())
}

/// Red team N10: Qwen Code runs its read tools unasked in its `default` mode. Started by Reins, it
/// asks for each, so a read of `.env` and a search that reaches it are both high-risk cards; with
/// both rejected, the key never reaches the model.
#[test]
fn its_own_reads_and_searches_ask_and_a_search_reaching_env_is_high() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    std::fs::write(
        cli.ws().join(".env"),
        format!("AWS_SECRET_ACCESS_KEY={key}\n"),
    )?;
    let ws = cli.ws().display().to_string();
    let read = serde_json::json!({"file_path": format!("{ws}/.env")}).to_string();
    let grep = serde_json::json!({"pattern": "AWS_SECRET", "path": ws}).to_string();
    let mock = MockLlm::start(vec![
        mock_llm::calls("Reading the env file.", &[("call_1", "read_file", &read)]),
        mock_llm::calls("Searching.", &[("call_2", "grep_search", &grep)]),
        mock_llm::text("Done.", 8),
    ])?;
    let mut child = start(&cli, QWEN, &mock, "Check the config")?;
    for expected in [".env is a protected path", "itself, and it reaches .env"] {
        let card = card(&cli, &mut child)?;
        assert_eq!(card["risk"], "high", "{card}");
        assert!(card.to_string().contains(expected), "{expected}: {card}");
        let id = card["id"].as_str().unwrap_or_default();
        let out = cli
            .strict_cmd()
            .args(["reject", id, "--reason", "no"])
            .output()?;
        assert!(out.status.success(), "{}", super::common::text(&out));
    }
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    let seen = mock.seen();
    assert!(seen.len() >= 3, "every scripted reply was asked for");
    assert!(
        seen.iter().all(|s| !s.body.to_string().contains(key)),
        "the key reached the model"
    );
    Ok(())
}
