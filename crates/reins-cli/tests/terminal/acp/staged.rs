//! A command an external agent runs through Reins (`terminal/create`) is staged like the LLM
//! agent's: the card shows what it did in a copy of the workspace, approving lands exactly that
//! without running it again, and the agent reads its staged output from `terminal/output`.

use super::common::{text, Cli};
use super::lifecycle::Scripted;
use super::{card, finish};

#[test]
fn an_acp_agents_terminal_command_is_staged_and_approved_by_its_real_diff() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let ws = cli.ws();
    std::fs::write(
        ws.join("Makefile"),
        "all:\n\tdate +%s%N > stamp\n\trm -f old.txt\n\t@echo made-it\n",
    )?;
    std::fs::write(ws.join("old.txt"), "old\n")?;
    let agent = Scripted::new(
        &cli,
        serde_json::json!({"turns": [[{"terminal": "make"}, {"say": "Built."}]]}),
    )?;
    let mut child = agent.command(&cli, "Build it").spawn()?;
    let card = card(&cli, &mut child)?;
    assert_eq!(card["tool"], "shell.exec", "{card}");
    let staged = card["staged"].as_str().unwrap_or_default();
    assert!(
        staged.contains("changes none, creates 1, deletes 1; no network used"),
        "{card:#}"
    );
    assert!(!ws.join("stamp").exists(), "staging landed nothing");
    let preview = card["preview"].as_str().unwrap_or_default();
    let stamp = preview
        .split("+++ b/stamp")
        .nth(1)
        .and_then(|rest| rest.lines().find(|l| l.starts_with('+') && l.len() > 5))
        .map(|l| l[1..].to_owned())
        .unwrap_or_default();
    assert!(!stamp.is_empty(), "{preview}");
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(std::fs::read_to_string(ws.join("stamp"))?.trim(), stamp);
    assert!(!ws.join("old.txt").exists());
    // The agent read the staged run's output from its terminal.
    let log = std::fs::read_to_string(cli.tmp.path().join("agent/agent.log"))?;
    let output = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|m| m["result"]["output"].is_string())
        .map(|m| {
            m["result"]["output"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_default();
    assert!(
        output.contains("made-it") && output.contains("the command did not run again"),
        "{log}"
    );
    Ok(())
}
