//! An agent let write the workspace is watched between its moves: what it changed there that no
//! approval covered stops the run, in words, and rolling back to the checkpoint it names undoes it.
//! A change it was allowed, with the content it reported, goes through.

use serde_json::json;

use super::common::{text, Cli};
use super::lifecycle::Scripted;
use super::{card, finish};

/// `reins run --acp` with the scripted agent, let write the workspace too.
fn run(cli: &Cli, agent: &Scripted) -> anyhow::Result<std::process::Child> {
    Ok(agent
        .command(cli, "Write the notes")
        .arg("--agent-may-write")
        .arg(cli.ws())
        .spawn()?)
}

fn approve_first_card(cli: &Cli, child: &mut std::process::Child) -> anyhow::Result<()> {
    let card = card(cli, child)?;
    assert_eq!(card["tool"], "agent.permission", "{card}");
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    Ok(())
}

#[test]
fn a_change_other_than_the_one_approved_and_a_deletion_nobody_asked_for_stop_the_run_and_undo(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    std::fs::write(cli.ws().join("NOTES.md"), "old notes\n")?;
    std::fs::write(cli.ws().join("keep.txt"), "keep me\n")?;
    let agent = Scripted::new(
        &cli,
        json!({"turns": [[
            {"permission": {"path": "NOTES.md", "content": "new notes\n"}},
            {"itself": {"path": "NOTES.md", "content": "new notes\nand a line nobody saw\n"}},
            {"remove": "keep.txt"},
            {"say": "Done."}
        ]]}),
    )?;
    let mut child = run(&cli, &agent)?;
    approve_first_card(&cli, &mut child)?;
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(3), "{said}");
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended", "{show}");
    let found = cli.events("workspace.changed_unasked")?;
    assert_eq!(found.len(), 1, "{found:?}");
    let changes = found[0]["changes"].as_array().cloned().unwrap_or_default();
    let paths: Vec<(&str, &str)> = changes
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap_or(""),
                c["kind"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        paths,
        [("NOTES.md", "modified"), ("keep.txt", "removed")],
        "{found:?}"
    );
    // The person looks at the change, then undoes it: both files as they were before the turn.
    let undo = found[0]["undo"].as_i64().unwrap_or_default().to_string();
    let look = text(&cli.run(&["rollback", &id, "--to", &undo, "--dry-run"])?);
    assert!(look.contains("-and a line nobody saw"), "{look}");
    assert!(look.contains("+keep me"), "{look}");
    let out = cli.run(&["rollback", &id, "--to", &undo])?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.read("NOTES.md")?, "old notes\n");
    assert_eq!(cli.read("keep.txt")?, "keep me\n");
    Ok(())
}

#[test]
fn the_change_that_was_approved_with_the_content_reported_goes_through() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let agent = Scripted::new(
        &cli,
        json!({"turns": [[
            {"permission": {"path": "NOTES.md", "content": "new notes\n"}},
            {"itself": {"path": "NOTES.md", "content": "new notes\n"}},
            {"say": "Done."}
        ]]}),
    )?;
    let mut child = run(&cli, &agent)?;
    approve_first_card(&cli, &mut child)?;
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(cli.read("NOTES.md")?, "new notes\n");
    assert!(cli.events("workspace.changed_unasked")?.is_empty());
    let show = cli.json(&["show", &cli.only_run()?])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    Ok(())
}

#[test]
fn after_the_first_look_only_the_paths_the_watch_saw_are_looked_at_and_show_says_so(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    std::fs::write(cli.ws().join("NOTES.md"), "old notes\n")?;
    std::fs::write(cli.ws().join("Makefile"), "all:\n\t@echo made-it\n")?;
    // Looks: before the command (the attempt's first, on a new watch: a rescan); before the
    // write, after the command ran (the watch kept while the card waited); at the turn's end,
    // after the unasked change (the same watch, kept again).
    let agent = Scripted::new(
        &cli,
        json!({"turns": [[
            {"terminal": "make"},
            {"write": {"path": "b.txt", "content": "b\n"}},
            {"itself": {"path": "NOTES.md", "content": "rewritten unasked\n"}},
            {"say": "Done."}
        ]]}),
    )?;
    let mut child = run(&cli, &agent)?;
    for tool in ["shell.exec", "fs.write"] {
        let card = card(&cli, &mut child)?;
        assert_eq!(card["tool"], tool, "{card}");
        let out = cli
            .strict_cmd()
            .args(["approve", card["id"].as_str().unwrap_or_default()])
            .output()?;
        assert!(out.status.success(), "{}", text(&out));
    }
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(3), "{said}");
    assert_eq!(cli.read("b.txt")?, "b\n");
    let found = cli.events("workspace.changed_unasked")?;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["changes"][0]["path"], "NOTES.md", "{found:?}");
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    let how = show["run"]["compat"]["changesFoundBy"]
        .as_str()
        .unwrap_or_default();
    assert!(how.starts_with("watching the workspace"), "{show}");
    let shown = text(&cli.run(&["show", &id])?);
    assert!(
        shown.contains("changes     found by watching the workspace"),
        "{shown}"
    );
    Ok(())
}
