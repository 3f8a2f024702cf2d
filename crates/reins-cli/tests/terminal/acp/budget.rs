//! A budget over an external agent's own report of what it spent: the scripted ACP agent says
//! mid-turn (`usage_update`) that it has 6,000 tokens in context and spent a cent. With a budget
//! of 5,000 tokens the run pauses at its next safe point, before the agent's next write lands;
//! "allow more" carries it on in a new process, and "stop here" ends it there.

use std::process::Stdio;

use super::common::{text, Cli};
use super::lifecycle::Scripted;
use super::{bounded, finish};

/// The agent reports its usage, writes a.txt, then b.txt (its first turn); a resumed agent writes
/// b.txt (its second).
fn agent(cli: &Cli) -> anyhow::Result<Scripted> {
    let write = |p: &str| serde_json::json!({"write": {"path": p, "content": format!("{p}\n")}});
    Scripted::new(
        cli,
        serde_json::json!({"turns": [
            [{"usage": {"used": 6000, "cost": 0.01}}, write("a.txt"), write("b.txt"), {"say": "Both written."}],
            [write("b.txt"), {"say": "b.txt written."}],
        ]}),
    )
}

/// `reins run --acp` with a 5,000-token budget, file changes allowed; until it stops for a person.
fn run_to_the_budget(cli: &Cli, agent: &Scripted) -> anyhow::Result<(String, serde_json::Value)> {
    let child = agent
        .command(cli, "Write the two notes")
        .env(
            "REINS_POLICY",
            reins_tests::repo_root().join("tests/fixtures/allow-file-changes.toml"),
        )
        .args(["--budget-tokens", "5000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(3), "paused for a person: {said}");
    assert!(said.contains("budget reached"), "{said}");
    let id = cli.only_run()?;
    let budget = cli.json(&["budget", "show", &id])?;
    Ok((id, budget))
}

#[test]
fn an_acp_agent_that_reports_spending_past_its_budget_pauses_and_allow_more_carries_it_on(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let agent = agent(&cli)?;
    let (id, budget) = run_to_the_budget(&cli, &agent)?;
    assert_eq!(budget["waiting"], true, "{budget}");
    assert_eq!(budget["reached"]["measure"], "tokens", "{budget}");
    assert_eq!(budget["spent"]["tokens"], 6000, "{budget}");
    assert_eq!(budget["spent"]["costUsd"], 0.01, "{budget}");
    assert_eq!(
        cli.read("a.txt")?,
        "a.txt\n",
        "the write before the safe point landed"
    );
    assert!(!cli.ws().join("b.txt").exists(), "nothing after it");
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "paused", "{show}");
    // Resuming as it is would only pause again: the person is told to decide.
    let out = cli.cmd().args(["resume", &id]).output()?;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("reins budget allow"), "{}", text(&out));

    let out = cli
        .cmd()
        .args(["budget", "allow", &id, "tokens=10000"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("is queued"), "{}", text(&out));
    let out = bounded(cli.cmd().args(["worker", "--once"]))?;
    assert!(out.status.success(), "{}", text(&out));
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(cli.read("b.txt")?, "b.txt\n");
    assert_eq!(
        show["budget"]["limits"]["tokens"], 16000,
        "counted from what it spent"
    );
    let raised = cli.events("budget.raised")?;
    assert_eq!(raised.len(), 1, "{raised:?}");
    assert_eq!(raised[0]["to"], 16000.0, "{raised:?}");
    assert_eq!(cli.events("budget.reached")?.len(), 1);
    Ok(())
}

#[test]
fn stop_here_ends_an_acp_run_at_its_budget() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let agent = agent(&cli)?;
    let (id, _) = run_to_the_budget(&cli, &agent)?;
    let out = cli.cmd().args(["budget", "stop", &id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "cancelled", "{show}");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or_default()
            .contains("stopped at its budget"),
        "{show}"
    );
    let out = bounded(cli.cmd().args(["worker", "--once"]))?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(!cli.ws().join("b.txt").exists(), "nothing runs after stop");
    // A run that is not waiting at its budget cannot be "stopped here".
    let out = cli.cmd().args(["budget", "stop", &id]).output()?;
    assert!(!out.status.success(), "{}", text(&out));
    Ok(())
}
