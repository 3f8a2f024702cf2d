//! Rollback restores content no blob holds by rebuilding it from the journal, and refuses, changing
//! nothing, when the run is still active.

use std::sync::Arc;

use reins_core::api::{Options, Reins, Silent};
use reins_tests::{example_plan, PermitAll, Sandbox};

#[tokio::test]
async fn a_post_image_no_blob_holds_is_rebuilt_from_the_journal() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.reins(Arc::new(PermitAll)).await?;
    let id = engine
        .create_run(&example_plan("fix-logrotate.toml")?, &sb.ws(), &Silent)
        .await?;
    engine.drive(id, &Silent).await?;
    engine.close().await;
    let edited = sb.read("config/logrotate.conf")?;
    let note = sb.read("docs/incidents/2026-11-28-disk-full.md")?;

    // Someone changes both files by hand after the run: the run's results now exist nowhere on disk,
    // and Reins never stored them as blobs.
    std::fs::write(sb.ws().join("config/logrotate.conf"), "hand-edited\n")?;
    std::fs::remove_file(sb.ws().join("docs/incidents/2026-11-28-disk-full.md"))?;

    let reins = Reins::open(
        sb.data(),
        Options {
            database: sb.database.clone(),
            ..Options::default()
        },
    )
    .await?;
    let report = reins.rollback(id, 6, false).await?;
    assert_eq!(report.changes.len(), 2, "{report:?}");
    assert_eq!(
        sb.read("config/logrotate.conf")?,
        edited,
        "the edit is rebuilt: pre-image + old→new"
    );
    assert_eq!(
        sb.read("docs/incidents/2026-11-28-disk-full.md")?,
        note,
        "the write is rebuilt from its content"
    );

    // And the hand edit, saved in the snapshot, comes back on undo.
    let snapshot = report.snapshot.unwrap_or_default();
    reins.rollback(id, snapshot, false).await?;
    assert_eq!(sb.read("config/logrotate.conf")?, "hand-edited\n");
    assert!(!sb
        .ws()
        .join("docs/incidents/2026-11-28-disk-full.md")
        .exists());
    Ok(())
}

#[tokio::test]
async fn an_active_run_is_not_rolled_back() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.reins(Arc::new(PermitAll)).await?;
    let id = engine
        .create_run(&example_plan("tidy-configs.toml")?, &sb.ws(), &Silent)
        .await?;
    let before = sb.read("docs/RUNBOOK.md")?;
    let err = engine
        .rollback(id, 1, false)
        .await
        .err()
        .map(|e| (e.code().as_str(), e.to_string()));
    assert!(
        matches!(&err, Some(("conflict", m)) if m.contains("queued")),
        "{err:?}"
    );
    assert_eq!(sb.read("docs/RUNBOOK.md")?, before);
    Ok(())
}
