//! opencode (`opencode acp`): it runs its tools itself, asking first only if its permission rules
//! say so — Reins starts it with the rule that it asks for every tool. Its write waits on a card
//! with the diff it reports; approved, opencode writes the bytes; rejected, the model hears why; its
//! commands are judged by Reins' classifier and rules. Started in a way Reins does not recognise
//! (so left to its own rules), it writes without asking, and the run stops there. One inbox holds
//! the cards of a Qwen Code run, an opencode run and an LLM run at once, each naming its agent.

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::common::{text, Cli};
use super::{card, finish, start, start_in, Vendor};
use reins_tests::mock_llm::{self, MockLlm};

const OPENCODE: Vendor = Vendor::OpenCode;

#[test]
fn a_write_waits_on_a_card_with_the_diff_and_lands_once_approved() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        OPENCODE.write(&cli, "NOTES.md", "hello from opencode\n"),
        mock_llm::text("Done: NOTES.md written.", 8),
    ])?;
    let mut child = start(&cli, OPENCODE, &mock, "Write NOTES.md saying hello")?;
    let card = card(&cli, &mut child)?;
    assert_eq!(card["tool"], "agent.permission", "{card}");
    assert_eq!(card["agent"], "OpenCode 1.18.33", "{card}");
    // What it said before asking is on the card as its reason (Qwen Code says it only after).
    assert_eq!(card["context"]["why"], "I will write the file.", "{card}");
    let preview = card["preview"].as_str().unwrap_or_default();
    assert!(preview.contains("+hello from opencode"), "{preview}");
    assert!(
        !cli.ws().join("NOTES.md").exists(),
        "nothing before the review"
    );
    let said = super::approve_and_check_the_write(
        &cli,
        child,
        &card,
        "NOTES.md",
        "hello from opencode\n",
    )?;
    assert!(said.contains("Done: NOTES.md written."), "{said}");
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    let agent = &show["run"]["compat"]["externalAgent"];
    assert_eq!(agent["name"], "OpenCode", "{show}");
    assert_eq!(agent["version"], "1.18.33", "{show}");
    assert!(
        agent["capabilities"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c == "loadSession")),
        "{show}"
    );
    // Its tool call is on the timeline, as the agent reported it, and its stderr is kept.
    let out = cli.strict_cmd().args(["show", &id]).output()?;
    let shown = text(&out);
    assert!(shown.contains("OpenCode 1.18.33"), "{shown}");
    assert!(shown.contains("the agent reported"), "{shown}");
    assert!(shown.contains("[completed]"), "{shown}");
    // Its words are kept as it wrote them, each message once and in order, for the timeline.
    let messages: Vec<&str> = show["audit"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "agent.reported" && e["payload"]["what"] == "message")
        .filter_map(|e| e["payload"]["detail"]["text"].as_str())
        .collect();
    assert_eq!(
        messages,
        ["I will write the file.", "Done: NOTES.md written."],
        "{show}"
    );
    assert!(shown.contains("said: I will write the file."), "{shown}");
    assert!(show["agentLog"]["path"].as_str().is_some(), "{show}");
    // The scripted server answered opencode's title request apart: the script was the work only.
    assert_eq!(mock.left(), 0);
    assert!(!super::asked_its_own_classifier(&mock));
    // opencode wrote the file itself, but its pre-image was kept before it heard yes: a rollback
    // to the checkpoint before the card takes the write back.
    let kinds = super::kinds(&cli)?;
    assert!(
        kinds.iter().any(|k| k == "intent.handed_to_agent"),
        "{kinds:?}"
    );
    // The first step checkpoint is the brief's: before the card.
    let before = show["checkpoints"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["level"] == "step"))
        .and_then(|c| c["seq"].as_i64())
        .ok_or_else(|| anyhow::anyhow!("no checkpoint after the brief: {show}"))?;
    let out = cli
        .strict_cmd()
        .args(["rollback", &id, "--to", &before.to_string()])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !cli.ws().join("NOTES.md").exists(),
        "rolled back: {}",
        text(&out)
    );
    Ok(())
}

#[test]
fn a_rejected_write_leaves_the_file_alone_and_the_model_hears_the_reason() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        OPENCODE.write(&cli, "NOTES.md", "hello from opencode\n"),
        mock_llm::text("Understood; I will not write it.", 8),
    ])?;
    super::reject_and_check_the_reason_is_heard(&cli, OPENCODE, &mock, "NOTES.md")
}

#[test]
fn its_commands_are_judged_by_reins() -> anyhow::Result<()> {
    super::commands_are_judged_by_reins(OPENCODE)
}

#[test]
fn behind_a_shell_it_is_an_agent_reins_does_not_know_and_gets_the_strictest_profile(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        OPENCODE.write(&cli, "NOTES.md", "unasked\n"),
        mock_llm::text("Done.", 8),
    ])?;
    OPENCODE.agent(&cli, &mock)?;
    // Through a shell, Reins does not see that it starts opencode: opencode keeps its default
    // rules (every tool runs without asking anyone), and Reins gives it the profile of an agent it
    // does not know. It may read its program, but write nothing but its temp dir and reach no
    // port but its model's and the memory link's: it cannot keep its own state or reach the
    // server it starts for itself, so it never gets to act, and the workspace is untouched.
    let program = super::agents_bin("opencode")?.join("opencode");
    let wrapped = format!("/bin/sh -c 'exec {} acp'", program.display());
    let child = super::start_with(&cli, &wrapped, "Write NOTES.md")?;
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(3), "{said}");
    assert!(!cli.ws().join("NOTES.md").exists(), "{said}");
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended", "{show}");
    assert_eq!(mock.count(), 0, "it never reached its model: {show}");
    Ok(())
}

#[test]
fn one_inbox_holds_cards_from_qwen_code_opencode_and_an_llm_run() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let (ws_qwen, ws_oc, ws_llm) = (
        cli.tmp.path().join("ws-qwen"),
        cli.tmp.path().join("ws-opencode"),
        cli.tmp.path().join("ws-llm"),
    );
    for ws in [&ws_qwen, &ws_oc, &ws_llm] {
        std::fs::create_dir_all(ws)?;
    }
    let write = |vendor: Vendor, ws: &std::path::Path| {
        let path = ws.join("NOTES.md").display().to_string();
        let (tool, args) = match vendor {
            Vendor::Qwen => (
                "write_file",
                serde_json::json!({"file_path": path, "content": "q\n"}),
            ),
            Vendor::OpenCode => (
                "write",
                serde_json::json!({"filePath": path, "content": "o\n"}),
            ),
        };
        mock_llm::calls("Writing.", &[("call_1", tool, &args.to_string())])
    };
    let qwen_mock = MockLlm::start(vec![write(Vendor::Qwen, &ws_qwen)])?;
    let oc_mock = MockLlm::start(vec![write(Vendor::OpenCode, &ws_oc)])?;
    let llm_mock = MockLlm::start(vec![mock_llm::calls(
        "Writing.",
        &[("w1", "fs_write", r#"{"path":"NOTES.md","content":"l\n"}"#)],
    )])?;
    let qwen = Vendor::Qwen.agent(&cli, &qwen_mock)?;
    let oc = Vendor::OpenCode.agent(&cli, &oc_mock)?;
    let mut children = vec![
        start_in(&cli, &qwen, "Write the notes", &ws_qwen)?,
        start_in(&cli, &oc, "Write the notes", &ws_oc)?,
        cli.strict_cmd()
            .args(["run", "--llm", "Write the notes", "--workspace"])
            .arg(&ws_llm)
            .args(["--base-url", &llm_mock.base_url(), "--model", "mock-model"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?,
    ];
    let deadline = Instant::now() + Duration::from_secs(180);
    let cards = loop {
        let list = cli.json(&["approvals"])?;
        let cards = list.as_array().cloned().unwrap_or_default();
        if cards.len() == 3 {
            break cards;
        }
        for c in &mut children {
            if let Some(status) = c.try_wait()? {
                anyhow::bail!("a run ended ({status}) before all three cards: {list}");
            }
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "not three cards after three minutes: {list}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let mut agents: Vec<String> = cards
        .iter()
        .map(|c| c["agent"].as_str().unwrap_or_default().to_owned())
        .collect();
    agents.sort();
    assert_eq!(agents[0], "OpenCode 1.18.33", "{agents:?}");
    assert!(agents.iter().any(|a| a == "llm"), "{agents:?}");
    assert!(
        agents.iter().any(|a| a.to_lowercase().contains("qwen")),
        "{agents:?}"
    );
    let out = cli.strict_cmd().arg("approvals").output()?;
    let listed = text(&out);
    assert!(
        listed.contains("OpenCode 1.18.33") && listed.contains("llm"),
        "{listed}"
    );
    for mut c in children {
        c.kill()?;
        c.wait()?;
    }
    Ok(())
}
