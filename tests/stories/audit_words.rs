//! The audit log in words: every event a day of ordinary use writes reads back as its kind, as
//! one sentence, with approvals named by their action.

use reins_core::api::{FactOrigin, NewFact, RememberedView, ResumeMode, Silent};
use reins_tests::review::{approve_once, pending, waiting};
use reins_tests::Sandbox;

const WRITE_NOTE: &str = r#"
name = "note"
goal = "leave a note"
[[steps]]
tool = "fs.write"
why = "tell on-call what changed"
args = { path = "docs/note.md", content = "rotate daily\n" }
"#;

#[tokio::test]
async fn a_day_of_use_reads_as_sentences() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.with_defaults().await?;
    // Approved, after a pause while it waited.
    let first = sb.start(&reins, WRITE_NOTE).await?;
    assert!(waiting(&reins.drive(first, &Silent).await?));
    reins.pause(first).await?;
    reins.resume(first, ResumeMode::Continue).await?;
    reins.drive(first, &Silent).await?;
    let a = pending(&reins, first).await?;
    reins.approve(&a.id, approve_once()).await?;
    reins.drive(first, &Silent).await?;
    // Rejected with a reason.
    let second = sb.start(&reins, WRITE_NOTE).await?;
    reins.drive(second, &Silent).await?;
    let b = pending(&reins, second).await?;
    reins
        .reject(&b.id, "keep notes in the README", "user:local")
        .await?;
    reins.drive(second, &Silent).await?;
    // A fact added, edited and deleted.
    let remembered = reins
        .memory_remember(NewFact {
            category: "style".into(),
            key: "indent".into(),
            value: "two spaces".into(),
            confidence: None,
            origin: FactOrigin::User,
        })
        .await?;
    let RememberedView::Stored { fact } = remembered else {
        anyhow::bail!("not stored: {remembered:?}");
    };
    reins.memory_edit(&fact.id, "four spaces").await?;
    let said = reins_tests::events(&reins, None).await?;
    assert!(
        said.iter()
            .any(|e| e.sentence == "Fact style/indent edited by you (now version 2)"),
        "a fact is named by its key while it exists: {:#?}",
        said.iter().map(|e| &e.sentence).collect::<Vec<_>>()
    );
    reins.memory_delete(&fact.id).await?;

    let all = reins_tests::events(&reins, None).await?;
    let unread: Vec<_> = all
        .iter()
        .filter(|e| e.sentence.contains("cannot read as a sentence"))
        .map(|e| format!("{} {}", e.kind, e.payload))
        .collect();
    assert!(unread.is_empty(), "{unread:#?}");
    let said: Vec<&str> = all.iter().map(|e| e.sentence.as_str()).collect();
    for want in [
        "You approved fs.write on docs/note.md (once)",
        "You rejected fs.write on docs/note.md: keep notes in the README",
        "The policy asked for review of step 1 (fs.write, medium risk)",
        "Step 1 waits for review: fs.write on docs/note.md (medium risk)",
        // Deleted, the fact leaves only its category.
        "Fact style added by you (version 1)",
        "Fact style edited by you (now version 2)",
        "You deleted a style fact",
        "You paused the run",
        "Attempt 3 went on with step 1 after the decision on it",
    ] {
        assert!(
            said.iter().any(|s| s.starts_with(want)),
            "no sentence starts with {want:?}:\n{said:#?}"
        );
    }
    Ok(())
}
