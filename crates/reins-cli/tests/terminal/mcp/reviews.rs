//! What a person sees and decides for an MCP call: the card with its exact arguments, a rejection,
//! a rule that lets a read through, and an edit that may change arguments only.

use super::{add_fs, llm_run, with_policy, ws_path};
use crate::common::{text, Cli};
use reins_tests::mock_llm::{self, MockLlm};

#[test]
fn an_mcp_write_is_reviewed_with_its_exact_arguments_and_lands_once_approved() -> anyhow::Result<()>
{
    let cli = Cli::new()?;
    add_fs(&cli)?;
    let listed = cli.json(&["mcp", "list"])?;
    assert_eq!(listed[0]["name"], "fs", "{listed}");
    let tools = text(
        &cli.strict_cmd()
            .args(["mcp", "tools", "fs", "--workspace"])
            .arg(cli.ws())
            .output()?,
    );
    assert!(
        tools.contains("write_file  (offered as fs__write_file)"),
        "{tools}"
    );
    assert!(
        tools.contains("the server claims: not read-only, destructive"),
        "{tools}"
    );

    let target = ws_path(&cli, "docs/MCP.md")?;
    let args = serde_json::json!({"path": target, "content": "written through MCP\n"}).to_string();
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Writing it with the filesystem server.",
            &[("w1", "fs__write_file", &args)],
        ),
        mock_llm::text("Wrote docs/MCP.md.", 3),
    ])?;
    let out = llm_run(&cli, &mock, "write docs/MCP.md", "fs")
        .arg("--no-wait")
        .output()?;
    assert_eq!(
        out.status.code(),
        Some(3),
        "waits for a review: {}",
        text(&out)
    );
    assert!(!cli.ws().join("docs/MCP.md").exists());
    let offered = mock.seen()[0].body["tools"].to_string();
    assert!(
        offered.contains("fs__write_file"),
        "the model was offered the server's tools"
    );

    let pending = cli.json(&["approvals"])?;
    assert_eq!(pending[0]["tool"], "mcp.call", "{pending}");
    assert_eq!(
        pending[0]["risk"], "high",
        "the server says it is destructive: {pending}"
    );
    let approval = pending[0]["id"].as_str().unwrap_or_default().to_owned();
    let card = text(
        &cli.strict_cmd()
            .args(["approval", "show", &approval])
            .output()?,
    );
    for want in [
        "MCP server `fs` · tool `write_file`",
        "the server describes it: Create a new file",
        "the server claims (hints, not checked): not read-only, destructive",
        &format!("\"path\": \"{target}\""),
        "\"content\": \"written through MCP\\n\"",
    ] {
        assert!(card.contains(want), "{want:?} on the card:\n{card}");
    }
    let out = cli.strict_cmd().args(["approve", &approval]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = cli.strict_cmd().args(["worker", "--once"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.read("docs/MCP.md")?, "written through MCP\n");
    assert_eq!(mock.count(), 2, "exactly two model requests");
    let results = mock_llm::tool_results(&mock.seen()[1]);
    assert!(results[0].1.contains("Successfully wrote"), "{results:?}");

    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(show["intents"][0]["tool"], "mcp.call");
    assert_eq!(show["intents"][0]["status"], "confirmed");
    let verify = cli.strict_cmd().args(["audit", "verify"]).output()?;
    assert!(verify.status.success(), "{}", text(&verify));
    Ok(())
}

#[test]
fn a_rejected_mcp_write_leaves_no_file_and_the_model_hears_why() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    add_fs(&cli)?;
    let args =
        serde_json::json!({"path": ws_path(&cli, "docs/NO.md")?, "content": "no\n"}).to_string();
    let mock = MockLlm::start(vec![
        mock_llm::calls("Writing.", &[("w1", "fs__write_file", &args)]),
        mock_llm::text("Understood, not writing it.", 3),
    ])?;
    let out = llm_run(&cli, &mock, "write docs/NO.md", "fs")
        .arg("--no-wait")
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let approval = cli.json(&["approvals"])?[0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let out = cli
        .strict_cmd()
        .args(["reject", &approval, "--reason", "docs are frozen this week"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = cli.strict_cmd().args(["worker", "--once"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(!cli.ws().join("docs/NO.md").exists());
    assert_eq!(mock.count(), 2);
    let results = mock_llm::tool_results(&mock.seen()[1]);
    assert!(
        results[0].1.contains("docs are frozen this week"),
        "the model hears the reason: {results:?}"
    );
    Ok(())
}

#[test]
fn a_rule_allowing_read_text_file_on_that_server_runs_without_a_card() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    add_fs(&cli)?;
    let args = serde_json::json!({"path": ws_path(&cli, "docs/RUNBOOK.md")?}).to_string();
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Reading the runbook.",
            &[("r1", "fs__read_text_file", &args)],
        ),
        mock_llm::text("Read it.", 3),
    ])?;
    let mut c = llm_run(&cli, &mock, "read the runbook", "fs");
    with_policy(
        &cli,
        &mut c,
        "[[rules]]\ndecision = \"allow\"\nserver = \"fs\"\nmcp_tool = \"read_text_file\"\n",
    )?;
    let out = c.output()?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(cli
        .json(&["approvals"])?
        .as_array()
        .is_some_and(Vec::is_empty));
    let runbook = cli.read("docs/RUNBOOK.md")?;
    let results = mock_llm::tool_results(&mock.seen()[1]);
    let first_line = runbook.lines().next().unwrap_or_default();
    assert!(
        results[0].1.contains(first_line),
        "the file reached the model: {results:?}"
    );
    Ok(())
}

#[test]
fn a_person_may_edit_an_mcp_calls_arguments_but_not_what_the_server_said_of_it(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    add_fs(&cli)?;
    let target = ws_path(&cli, "docs/PLAN.md")?;
    let args = serde_json::json!({"path": target, "content": "draft\n"}).to_string();
    let mock = MockLlm::start(vec![
        mock_llm::calls("Writing the plan.", &[("w1", "fs__write_file", &args)]),
        mock_llm::text("Done.", 3),
    ])?;
    let out = llm_run(&cli, &mock, "write the plan", "fs")
        .arg("--no-wait")
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let approval = cli.json(&["approvals"])?[0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut action = cli.json(&["approval", "show", &approval, "--action"])?;
    let edit = cli.tmp.path().join("edit.json");

    action["args"]["tool"] = "move_file".into();
    std::fs::write(&edit, action.to_string())?;
    let out = cli
        .strict_cmd()
        .args(["approve", &approval, "--edit"])
        .arg(&edit)
        .output()?;
    assert!(
        !out.status.success(),
        "another tool is refused: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("may change its arguments only"),
        "{}",
        text(&out)
    );

    action["args"]["tool"] = "write_file".into();
    action["args"]["arguments"]["content"] = "final\n".into();
    action["args"]["hints"] = serde_json::json!({"readOnly": true});
    std::fs::write(&edit, action.to_string())?;
    let out = cli
        .strict_cmd()
        .args(["approve", &approval, "--edit"])
        .arg(&edit)
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("HIGH"),
        "the server's own hints still rate it: {}",
        text(&out)
    );
    let out = cli.strict_cmd().args(["worker", "--once"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.read("docs/PLAN.md")?, "final\n");
    Ok(())
}
