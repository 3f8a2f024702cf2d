//! Retention keeps the last N checkpoints of finished runs and removes blobs nothing needs — and
//! never what a run, a rollback or a resume still needs.

use std::time::Duration;

use reins_core::api::{Digest, FileImage, Reins, Silent};
use reins_tests::{blob_stored, on_postgres, orphan_blob, repo_root, Sandbox};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_keeps_the_last_checkpoints_and_what_is_still_needed() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let r = Reins::open(sb.data(), sb.options()).await?;
    let plan = repo_root().join("examples/plans/tidy-configs.toml");
    let id = r.create_run(&plan, &sb.ws(), &Silent).await?;
    r.work(true, Duration::from_millis(10), &Silent).await?;
    let before = r.run_detail(id).await?;
    let total = before.checkpoints.len();
    assert!(total > 3, "{total} checkpoints");

    // An orphan blob from long ago, one from just now, and a pre-image the journal needs.
    // Beside an embedded database they are files; in team mode, rows of the shared database.
    let data = sb.data();
    let old = orphan_blob(
        &r,
        &data,
        b"an orphan from long ago",
        Duration::from_secs(3600),
    )
    .await?;
    let young = orphan_blob(&r, &data, b"an orphan from just now", Duration::ZERO).await?;

    let dry = r.gc(3, true).await?;
    assert_eq!((dry.runs, dry.checkpoints), (1, (total - 3) as u64));
    let removable = if on_postgres() {
        dry.db_blobs
    } else {
        dry.blob_files as u64
    };
    assert_eq!(removable, 1, "only the old orphan may go: {dry:?}");
    // The young orphan, and the finished run's workspace fingerprint (written moments ago).
    assert_eq!(dry.young_blobs_kept, 2);
    assert_eq!(
        r.run_detail(id).await?.checkpoints.len(),
        total,
        "a dry run removes nothing"
    );
    assert!(blob_stored(&r, &data, &old).await?);

    let done = r.gc(3, false).await?;
    assert_eq!(done.checkpoints, (total - 3) as u64);
    let after = r.run_detail(id).await?;
    assert_eq!(after.checkpoints.len(), 3);
    assert!(
        after.recovery.damage.is_empty(),
        "removed checkpoints are not damage: {:?}",
        after.recovery.damage
    );
    assert_eq!(
        after.recovery.point,
        after.checkpoints.last().map(|c| c.seq)
    );
    assert!(
        !blob_stored(&r, &data, &old).await?,
        "the old orphan is gone"
    );
    assert!(
        blob_stored(&r, &data, &young).await?,
        "the young orphan stays"
    );
    // Every pre-image the journal refers to is still readable: rollback still works.
    for intent in &after.intents {
        let pre: &[FileImage] = &intent.pre_images;
        for digest in pre.iter().filter_map(|i| i.sha256.clone()) {
            let bytes = r.blob(&digest).await?;
            assert!(
                bytes.is_some_and(|b| Digest::of(&b) == digest),
                "pre-image {digest} kept"
            );
        }
    }
    let oldest_kept = after.checkpoints.first().map_or(0, |c| c.seq);
    let refused = r
        .rollback(id, 1, true)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(refused.contains("removed by retention"), "{refused}");
    // The oldest kept checkpoint is before the last edit: rolling back to it undoes that edit.
    let report = r.rollback(id, oldest_kept, false).await?;
    assert!(
        !report.changes.is_empty() && report.checkpoint.is_some(),
        "{report:?}"
    );
    assert!(
        !sb.read("docs/RUNBOOK.md")?.contains("archive/"),
        "the edit was undone"
    );
    assert!(r.doctor().await?.healthy);
    if on_postgres() {
        // A team shares no filesystem: not one blob was written to this machine's data dir.
        let files = reins_tests::files_under(&data.blobs());
        assert!(files.is_empty(), "blob files in team mode: {files:?}");
    }
    assert!(after.audit.iter().any(|e| e.kind == "retention.pruned"));
    Ok(())
}
