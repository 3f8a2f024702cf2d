//! The MACs as verification reads them, walking the chain in one stretch and in two (as on a large
//! log): an event with no MAC in a keyed log, where it is, and a log keyed only from some seq on.

use std::sync::Arc;

use crate::audit::verify::{self, DamageKind};
use crate::keys::MemoryStore;
use crate::store::audit::{self as table, Actor};
use crate::store::Store;

async fn append(store: &Store, n: usize) -> anyhow::Result<()> {
    for i in 0..n {
        let mut tx = store.begin().await?;
        table::append_raw(
            &mut tx,
            Actor::Harness,
            "run.state_changed",
            None,
            &serde_json::json!({ "i": i }),
            1_000 + i as i64,
        )
        .await?;
        tx.commit().await?;
    }
    store.anchor().flush();
    Ok(())
}

async fn keyed(dir: &std::path::Path, keys: &Arc<MemoryStore>) -> anyhow::Result<Store> {
    let store = Store::open(&dir.join("reins.db")).await?;
    store.use_keys(Arc::clone(keys) as Arc<dyn crate::keys::SecretStore>);
    Ok(store)
}

/// What verification says in one stretch and in two; both must agree.
async fn said(store: &Store) -> anyhow::Result<(Option<(DamageKind, Option<i64>)>, &'static str, i64, Option<i64>)> {
    let mut seen = Vec::new();
    for split_at in [i64::MAX, 2] {
        let v = verify::verify_split(store, split_at).await?;
        seen.push((
            v.damage.map(|d| (d.kind, d.seq)),
            v.keys.status,
            v.keys.vouched,
            v.keys.keyed_since,
        ));
    }
    assert_eq!(seen[0], seen[1], "one stretch and two agree");
    Ok(seen.remove(0))
}

#[tokio::test]
async fn an_event_without_its_mac_is_named_wherever_it_is() -> anyhow::Result<()> {
    let keys = Arc::new(MemoryStore::default());
    let dir = tempfile::tempdir()?;
    let store = keyed(dir.path(), &keys).await?;
    append(&store, 20).await?;
    assert_eq!(said(&store).await?, (None, "checked", 20, Some(1)));
    for seq in [3, 12, 20] {
        sqlx::query("UPDATE audit_events SET mac = NULL WHERE seq = $1")
            .bind(seq)
            .execute(store.pool())
            .await?;
        let (damage, ..) = said(&store).await?;
        assert_eq!(damage, Some((DamageKind::Unvouched, Some(3))), "the first: seq 3");
    }
    Ok(())
}

#[tokio::test]
async fn a_log_keyed_from_some_seq_on_verifies_and_says_from_where() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("reins.db")).await?;
    append(&store, 6).await?;
    assert_eq!(said(&store).await?.1, "unchecked", "no keyring given");
    let keys = Arc::new(MemoryStore::default());
    store.use_keys(Arc::clone(&keys) as Arc<dyn crate::keys::SecretStore>);
    assert_eq!(said(&store).await?, (None, "unkeyed", 0, None));
    append(&store, 6).await?;
    assert_eq!(said(&store).await?, (None, "checked", 6, Some(7)));

    // A MAC moved onto an earlier, unkeyed event names this key and does not hold.
    sqlx::query("UPDATE audit_events SET mac = (SELECT mac FROM audit_events WHERE seq = 9) WHERE seq = 2")
        .execute(store.pool())
        .await?;
    assert_eq!(said(&store).await?.0, Some((DamageKind::Forged, Some(2))));
    Ok(())
}
