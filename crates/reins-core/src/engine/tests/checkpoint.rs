use std::sync::Arc;

use crate::agent::script::Plan;
use crate::blob::BlobStore;
use crate::checkpoint::{self, Checkpoint, Level};
use crate::engine::stored;
use crate::engine::commit::Change;
use crate::engine::{Engine, Silent};
use crate::policy::PermitAll;
use crate::store::Store;
use crate::workspace::Workspace;

#[tokio::test]
async fn a_checkpoint_over_one_mib_goes_to_the_blob_store_and_verifies() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("reins.db")).await?;
    let blobs = BlobStore::open(&dir.path().join("blobs"))?;
    let engine = Engine::new(store, blobs, Arc::new(PermitAll), 30_000);
    let ws = Workspace::open(dir.path())?;
    let plan = Plan {
        name: "n".into(),
        goal: "g".into(),
        steps: Vec::new(),
    };
    let run = engine.create_run(&plan.new_run(), &ws).await?;

    let big = Checkpoint {
        goal: "g".into(),
        agent: serde_json::Value::String("x".repeat(checkpoint::INLINE_LIMIT + 10)),
        ..Checkpoint::default()
    };
    let prepared = engine.prepare(&big, Level::Step)?;
    assert!(
        engine.encode(engine.prepare(&big, Level::Step)?).await?.in_blob,
        "over the inline limit"
    );
    let applied = engine
        .commit(
            Some(run),
            Change::default().checkpoint(prepared),
            None,
            &Silent,
        )
        .await?;
    let seq = applied
        .checkpoint
        .ok_or_else(|| anyhow::anyhow!("no checkpoint written"))?;

    let inspected = stored::inspect(&engine.store, &engine.blobs, run).await?;
    let row = inspected
        .iter()
        .find(|i| i.seq == seq)
        .ok_or_else(|| anyhow::anyhow!("no row"))?;
    assert!(row.in_blob);
    assert_eq!(
        row.payload.as_ref().ok().map(|p| p.agent.clone()),
        Some(big.agent.clone())
    );
    let inline: Option<Vec<u8>> =
        sqlx::query_scalar("SELECT payload FROM checkpoints WHERE run_id = $1 AND seq = $2")
            .bind(run.to_string())
            .bind(seq)
            .fetch_one(engine.store.pool())
            .await?;
    assert!(inline.is_none(), "the row keeps only the hash");

    // Damage the blob: the checkpoint must read as invalid, not as data.
    let digest =
        crate::digest::Digest::parse(&row.sha256).ok_or_else(|| anyhow::anyhow!("digest"))?;
    let path = dir
        .path()
        .join("blobs")
        .join(&digest.as_str()[..2])
        .join(&digest.as_str()[2..]);
    std::fs::write(&path, b"garbage")?;
    let again = stored::inspect(&engine.store, &engine.blobs, run).await?;
    assert!(again.iter().any(|i| i.seq == seq && i.payload.is_err()));
    Ok(())
}
