//! A staged command's card in the real window: the command, the line that says what it did in a
//! copy of the workspace, the diff of every file, its output; `a` applies exactly that, without
//! the files the person unticked.

use super::*;

const BUILD: &str = r#"
name = "Regenerate"
goal = "Regenerate the constants"

[[steps]]
tool = "shell.exec"
why  = "the constants are generated from VERSION"
args = { command = "make" }
"#;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a display: run scripts/e2e"]
async fn p_a_staged_command_shows_its_real_diff_and_approving_lands_it() -> Result<()> {
    let home = Home::new()?;
    let ws = home.workspace(
        "ws",
        &[
            ("VERSION", "1.4.0\n"),
            ("old.txt", "stale\n"),
            (
                "Makefile",
                "all:\n\tmkdir -p gen\n\tprintf 'pub const VERSION: &str = \"%s\";\\n' $$(sed s/1.4.0/1.5.0/ VERSION) > gen/version.rs\n\tsed -i s/1.4.0/1.5.0/ VERSION\n\trm -f old.txt\n\t@echo regenerated\n",
            ),
        ],
    )?;
    let run = home.queue_plan(BUILD, &ws)?;
    let app = App::launch(&home).await?;
    let line = app
        .find(By::Css("[data-testid='staged-line']"))
        .await?
        .text()
        .await?;
    assert!(
        line.contains("changes 1 file, creates 1, deletes 1; no network used"),
        "{line}"
    );
    let card = app
        .find(By::Css("[data-testid='approval-card']"))
        .await?
        .text()
        .await?;
    assert!(card.contains("1.5.0"), "{card}");
    assert_eq!(
        read(&ws.join("VERSION")),
        "1.4.0\n",
        "staging changed nothing"
    );
    // Leave the deletion out: old.txt stays, the rest lands.
    app.click("[data-testid='staged-file'][data-path='old.txt']")
        .await?;
    let files = app
        .find(By::Css("[data-testid='staged-files']"))
        .await?
        .text()
        .await?;
    assert!(files.contains("What lands (2 of 3)"), "{files}");
    app.screenshot("staged").await?;
    app.key("a").await?;
    app.until("the staged result lands", || async {
        let show: serde_json::Value =
            serde_json::from_str(&home.reins(&["--json", "show", &run], &[])?)?;
        Ok(show["run"]["state"] == "succeeded")
    })
    .await?;
    assert_eq!(read(&ws.join("VERSION")), "1.5.0\n");
    assert_eq!(
        read(&ws.join("gen/version.rs")),
        "pub const VERSION: &str = \"1.5.0\";\n"
    );
    assert_eq!(read(&ws.join("old.txt")), "stale\n", "left out, so kept");
    let log = home.reins(&["audit", "list", "--kind", "approval.approved"], &[])?;
    assert!(log.contains("leaving out old.txt"), "{log}");
    app.quit().await
}
