//! A damaged database on disk: what opening refuses (naming the file, changing no byte), and what a
//! crash or a torn write leaves in the WAL (opened at the last whole commit).

use super::tests::insert_run;
use super::*;
use crate::ids::RunId;

fn assert_untouched(path: &std::path::Path, before: &[u8]) -> anyhow::Result<()> {
    assert_eq!(
        std::fs::read(path)?,
        before,
        "the file must not change by a single byte"
    );
    Ok(())
}

#[tokio::test]
async fn a_file_that_is_not_sqlite_is_refused_untouched() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("reins.db");
    let bytes = b"these are my notes, not a database\n".repeat(100);
    std::fs::write(&path, &bytes)?;
    let err = Store::open(&path).await.err();
    assert!(
        matches!(err, Some(StoreError::NotADatabase { .. })),
        "{err:?}"
    );
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains(&path.display().to_string()),
        "the error names the file: {text}"
    );
    assert_untouched(&path, &bytes)
}

#[tokio::test]
async fn a_damaged_database_is_refused_untouched() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("reins.db");
    let store = Store::open(&path).await?;
    for _ in 0..50 {
        insert_run(&store).await?;
    }
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(store.pool())
        .await?;
    store.close().await;
    let mut bytes = std::fs::read(&path)?;
    // Keep the header valid; scribble over the pages after it.
    for b in bytes.iter_mut().skip(4096).take(4096) {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes)?;
    let err = Store::open(&path).await.err();
    assert!(matches!(err, Some(StoreError::Corrupt { .. })), "{err:?}");
    assert_untouched(&path, &bytes)
}

#[tokio::test]
async fn a_database_from_a_newer_schema_is_refused_untouched() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("reins.db");
    let store = Store::open(&path).await?;
    sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (99991231000000, 'from the future', 1, x'00', 0)")
        .execute(store.pool())
        .await?;
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(store.pool())
        .await?;
    store.close().await;
    let bytes = std::fs::read(&path)?;
    let err = Store::open(&path).await.err();
    assert!(
        matches!(
            err,
            Some(StoreError::NewerSchema {
                found: 99991231000000,
                ..
            })
        ),
        "{err:?}"
    );
    assert_untouched(&path, &bytes)
}

/// A database as a crash leaves it: committed transactions still in the WAL, not yet checkpointed
/// into the main file. Copies the three files while the writer is open, then closes the writer.
async fn crashed_copy(
    n: usize,
) -> anyhow::Result<(tempfile::TempDir, std::path::PathBuf, Vec<RunId>)> {
    let dir = tempfile::tempdir()?;
    let live = dir.path().join("live.db");
    let store = Store::open(&live).await?;
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(insert_run(&store).await?);
    }
    let copy = dir.path().join("reins.db");
    for suffix in ["", "-wal", "-shm"] {
        let from = format!("{}{suffix}", live.display());
        if std::path::Path::new(&from).exists() {
            std::fs::copy(&from, format!("{}{suffix}", copy.display()))?;
        }
    }
    store.close().await;
    Ok((dir, copy, ids))
}

/// The runs a reopened copy holds must be exactly the first k of those committed, in order.
async fn assert_consistent_prefix(path: &std::path::Path, ids: &[RunId]) -> anyhow::Result<usize> {
    let store = Store::open(path).await?;
    assert_eq!(store.integrity_check().await?, ["ok"]);
    let present: std::collections::BTreeSet<String> = sqlx::query_scalar("SELECT id FROM runs")
        .fetch_all(store.pool())
        .await?
        .into_iter()
        .collect();
    let k = present.len();
    let prefix: std::collections::BTreeSet<String> =
        ids.iter().take(k).map(|i| i.to_string()).collect();
    assert_eq!(present, prefix, "a consistent prefix of the commits");
    store.close().await;
    Ok(k)
}

#[tokio::test]
async fn a_torn_wal_tail_opens_at_the_last_whole_commit() -> anyhow::Result<()> {
    let (_d, path, ids) = crashed_copy(40).await?;
    let wal = format!("{}-wal", path.display());
    let len = std::fs::metadata(&wal)?.len();
    assert!(len > 8192, "the WAL holds the commits ({len} bytes)");
    // The last frame was only half written when the power went.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)?
        .set_len(len - 2000)?;
    let k = assert_consistent_prefix(&path, &ids).await?;
    assert!(k < 40, "the torn commit is gone ({k} of 40 kept)");
    assert!(k >= 30, "everything before it is kept ({k} of 40)");
    Ok(())
}

#[tokio::test]
async fn a_corrupted_wal_frame_ends_recovery_there() -> anyhow::Result<()> {
    let (_d, path, ids) = crashed_copy(40).await?;
    let wal = format!("{}-wal", path.display());
    let mut bytes = std::fs::read(&wal)?;
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 64] {
        *b ^= 0xFF;
    }
    std::fs::write(&wal, &bytes)?;
    let k = assert_consistent_prefix(&path, &ids).await?;
    assert!(
        k < 40,
        "nothing after the bad frame is trusted ({k} of 40 kept)"
    );
    Ok(())
}

#[tokio::test]
async fn a_wal_without_its_shared_memory_file_still_recovers() -> anyhow::Result<()> {
    let (_d, path, ids) = crashed_copy(10).await?;
    let _ = std::fs::remove_file(format!("{}-shm", path.display()));
    assert_eq!(assert_consistent_prefix(&path, &ids).await?, 10);
    Ok(())
}

#[tokio::test]
async fn a_zeroed_header_is_refused_untouched() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("reins.db");
    let store = Store::open(&path).await?;
    insert_run(&store).await?;
    // Everything in the main file now, so closing has nothing left to write back into it.
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(store.pool())
        .await?;
    store.close().await;
    let mut bytes = std::fs::read(&path)?;
    for b in bytes.iter_mut().take(100) {
        *b = 0;
    }
    std::fs::write(&path, &bytes)?;
    let err = Store::open(&path).await.err();
    assert!(
        matches!(err, Some(StoreError::NotADatabase { .. })),
        "{err:?}"
    );
    assert_untouched(&path, &bytes)
}

/// Damage deep in a table is not looked for on every open (that would grow with the history); the
/// integrity check (`reins doctor`) finds it, and neither opening nor checking writes to the file.
#[tokio::test]
async fn a_few_flipped_bytes_in_a_table_page_are_found_by_the_integrity_check() -> anyhow::Result<()>
{
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("reins.db");
    let store = Store::open(&path).await?;
    for _ in 0..200 {
        insert_run(&store).await?;
    }
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(store.pool())
        .await?;
    store.close().await;
    let mut bytes = std::fs::read(&path)?;
    // The runs table's pages sit near the end: flip a handful of bytes in the last page's cells.
    let at = bytes.len() - 4096 + 8;
    for b in &mut bytes[at..at + 4] {
        *b ^= 0x5A;
    }
    std::fs::write(&path, &bytes)?;
    match Store::open(&path).await {
        Err(StoreError::Corrupt { .. } | StoreError::NotADatabase { .. }) => {}
        Err(other) => anyhow::bail!("unexpected: {other}"),
        Ok(store) => {
            let found = store.integrity_check().await.unwrap_or_default();
            assert_ne!(found, ["ok"], "the integrity check finds the damage");
            store.close().await;
        }
    }
    assert_untouched(&path, &bytes)
}
