//! Repository tests on both backends: a real SQLite file, and a database of its own on a throwaway
//! PostgreSQL cluster (`reins-testpg`). The same test body runs on each.

use rstest::rstest;

use super::*;
use crate::ids::RunId;
use crate::journal::{EffectClass, IntentStatus};
use crate::run::{RunEvent, RunState};
use crate::step::{StepKind, StepStatus};
use crate::action::{RecordedCall, ToolCall};

#[derive(Clone, Copy, Debug)]
pub(super) enum Backend {
    Sqlite,
    Postgres,
}

/// An empty store on `backend`, and the directory its files (the SQLite file, or this machine's
/// audit head anchor for the shared database) live in.
pub(super) async fn fresh(backend: Backend) -> anyhow::Result<(tempfile::TempDir, Store)> {
    let dir = tempfile::tempdir()?;
    let store = match backend {
        Backend::Sqlite => Store::open(&dir.path().join("reins.db")).await?,
        Backend::Postgres => {
            let url = postgres_database("store")?;
            Store::open_postgres(&url, &dir.path().join("team.audit-head"), 4, true).await?
        }
    };
    Ok((dir, store))
}

/// A new database on the process's throwaway PostgreSQL cluster.
pub(super) fn postgres_database(hint: &str) -> anyhow::Result<String> {
    Ok(reins_testpg::database(hint)?)
}

pub(super) fn run_row(id: RunId) -> runs::RunRow {
    runs::RunRow {
        id,
        name: "n".into(),
        goal: "g".into(),
        workspace: "/w".into(),
        agent_kind: "script".into(),
        compat: crate::compat::Compat::default(),
        state: RunState::Queued,
        state_version: 0,
        fence: 0,
        owner: None,
        lease_until: None,
        last_error: None,
        created_at: 1,
        updated_at: 1,
        not_before: None,
        machine: None,
    }
}

/// A claim that moves the run to running for `owner`.
fn running(owner: &str, expected_version: i64, lease_until: i64, now: i64) -> runs::Claim<'_> {
    runs::Claim {
        expected_version,
        to: RunState::Running,
        owner,
        lease_until,
        now,
        gone_owner: None,
    }
}

pub(super) async fn insert_run(store: &Store) -> anyhow::Result<RunId> {
    let id = RunId::new();
    let mut tx = store.begin().await?;
    runs::insert(&mut tx, &run_row(id), "{}").await?;
    tx.commit().await?;
    Ok(id)
}

#[tokio::test]
async fn opens_with_wal_foreign_keys_and_full_sync() -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Sqlite).await?;
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await?;
    let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
        .fetch_one(store.pool())
        .await?;
    let sync: i64 = sqlx::query_scalar("PRAGMA synchronous")
        .fetch_one(store.pool())
        .await?;
    assert_eq!(
        (mode.as_str(), fk, sync),
        ("wal", 1, 2),
        "WAL, foreign keys on, synchronous=FULL"
    );
    assert_eq!(store.schema_version().await?, Store::supported_schema());
    // F11: the database and its WAL are the owner's alone.
    use std::os::unix::fs::PermissionsExt as _;
    for suffix in ["", "-wal"] {
        let mut file = store.path().as_os_str().to_owned();
        file.push(suffix);
        let mode = std::fs::metadata(&file)?.permissions().mode();
        assert_eq!(mode & 0o077, 0, "{file:?} is {mode:o}");
    }
    Ok(())
}

#[tokio::test]
async fn reopening_keeps_data() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("reins.db");
    let store = Store::open(&path).await?;
    let id = insert_run(&store).await?;
    store.close().await;
    let again = Store::open(&path).await?;
    assert_eq!(runs::get(again.pool(), id).await?.name, "n");
    Ok(())
}

#[tokio::test]
async fn a_shared_database_keeps_data_across_opens_and_a_newer_schema_is_refused_untouched(
) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = postgres_database("reopen")?;
    let anchor = dir.path().join("team.audit-head");
    let store = Store::open_postgres(&url, &anchor, 2, true).await?;
    let id = insert_run(&store).await?;
    store.close().await;
    let again = Store::open_postgres(&url, &anchor, 2, true).await?;
    assert_eq!(runs::get(again.pool(), id).await?.name, "n");
    assert_eq!(again.schema_version().await?, Store::supported_schema());
    let newer = Store::supported_schema() + 1;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES ($1, 'from the future', TRUE, '\\x00'::bytea, 0)",
    )
    .bind(newer)
    .execute(again.pool())
    .await?;
    again.close().await;
    let refused = Store::open_postgres(&url, &anchor, 2, true).await;
    assert!(
        matches!(refused, Err(StoreError::NewerSchema { found, .. }) if found == newer),
        "{refused:?}"
    );
    Ok(())
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn claim_is_guarded_by_state_version_and_bumps_the_fence(#[case] backend: Backend) -> anyhow::Result<()> {
    let (_d, store) = fresh(backend).await?;
    let id = insert_run(&store).await?;
    let mut tx = store.begin().await?;
    let (fence, version) = runs::claim(&mut tx, id, &running("w1", 0, 100, 1)).await?;
    tx.commit().await?;
    assert_eq!((fence, version), (1, 1));

    let mut tx = store.begin().await?;
    let stale = runs::claim(&mut tx, id, &running("w2", 0, 100, 1)).await;
    assert!(
        matches!(stale, Err(StoreError::StaleState { .. })),
        "a claim on an old state_version must fail"
    );
    drop(tx);

    // While w1's lease (until 100) is live, nobody may take the run, unless w1 is known to be gone.
    let mut tx = store.begin().await?;
    let not_the_holder = runs::claim(
        &mut tx,
        id,
        &runs::Claim {
            gone_owner: Some("w9"),
            ..running("w2", 1, 300, 50)
        },
    )
    .await;
    assert!(
        matches!(not_the_holder, Err(StoreError::StaleState { .. })),
        "only the named dead holder's run"
    );
    drop(tx);

    let mut tx = store.begin().await?;
    let live = runs::claim(&mut tx, id, &running("w2", 1, 300, 50)).await;
    assert!(
        matches!(live, Err(StoreError::StaleState { .. })),
        "a live lease is never taken over"
    );
    drop(tx);

    let mut tx = store.begin().await?;
    let (fence2, _) = runs::claim(&mut tx, id, &running("w2", 1, 300, 150)).await?;
    tx.commit().await?;
    assert_eq!(fence2, 2, "taking over increments the fence");

    // The first worker is stale now: its lease renewal and its state writes must fail.
    let mut tx = store.begin().await?;
    assert!(matches!(
        runs::renew(&mut tx, id, fence, 300, 3).await,
        Err(StoreError::LostLease { .. })
    ));
    assert!(matches!(
        runs::advance(&mut tx, id, Some(fence), RunEvent::Succeed, None, 3).await,
        Err(StoreError::LostLease { .. })
    ));
    drop(tx);
    let row = runs::get(store.pool(), id).await?;
    assert_eq!(
        (row.state, row.owner.as_deref(), row.fence),
        (RunState::Running, Some("w2"), 2)
    );
    Ok(())
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn leaving_the_active_states_releases_the_lease(#[case] backend: Backend) -> anyhow::Result<()> {
    let (_d, store) = fresh(backend).await?;
    let id = insert_run(&store).await?;
    let mut tx = store.begin().await?;
    let (fence, _) = runs::claim(&mut tx, id, &running("w1", 0, 100, 1)).await?;
    runs::advance(&mut tx, id, Some(fence), RunEvent::Suspend, Some("why"), 2).await?;
    tx.commit().await?;
    let row = runs::get(store.pool(), id).await?;
    assert_eq!(
        (row.owner, row.lease_until, row.last_error.as_deref()),
        (None, None, Some("why"))
    );
    Ok(())
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn runnable_lists_queued_runs_expired_leases_and_gone_holders(#[case] backend: Backend) -> anyhow::Result<()> {
    let (_d, store) = fresh(backend).await?;
    let queued = insert_run(&store).await?;
    let live = insert_run(&store).await?;
    let expired = insert_run(&store).await?;
    let mut tx = store.begin().await?;
    runs::claim(&mut tx, live, &running("w-live", 0, 10_000, 1)).await?;
    runs::claim(&mut tx, expired, &running("w", 0, 500, 1)).await?;
    tx.commit().await?;
    let ids: Vec<RunId> = runs::runnable(store.pool(), 1_000, &[]).await?.into_iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&queued) && ids.contains(&expired) && !ids.contains(&live));

    // A holder known to be gone is not waited for, lease or not.
    let ids: Vec<RunId> = runs::runnable(store.pool(), 1_000, &["w-live".to_owned()]).await?.into_iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 3);
    let mut tx = store.begin().await?;
    let (fence, _) = runs::claim(
        &mut tx,
        live,
        &runs::Claim {
            gone_owner: Some("w-live"),
            ..running("w2", 1, 20_000, 1_000)
        },
    )
    .await?;
    tx.commit().await?;
    assert_eq!(fence, 2);
    Ok(())
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn checkpoint_seq_is_a_per_run_logical_clock(#[case] backend: Backend) -> anyhow::Result<()> {
    let (_d, store) = fresh(backend).await?;
    let a = insert_run(&store).await?;
    let b = insert_run(&store).await?;
    let cp = |sha: &'static str| checkpoints::NewCheckpoint {
        level: crate::checkpoint::Level::Step,
        schema_version: 1,
        body: checkpoints::Body::Inline(b"{}"),
        size: 2,
        sha256: sha,
        created_at: 1,
    };
    let mut tx = store.begin().await?;
    let s1 = checkpoints::insert(&mut tx, a, &cp("x")).await?;
    let s2 = checkpoints::insert(&mut tx, a, &cp("y")).await?;
    let t1 = checkpoints::insert(&mut tx, b, &cp("z")).await?;
    tx.commit().await?;
    assert_eq!((s1, s2, t1), (1, 2, 1));
    let dup = sqlx::query("INSERT INTO checkpoints (run_id, seq, level, schema_version, payload, size, sha256, created_at) VALUES ($1, 2, 'step', 1, x'00', 1, 's', 1)")
        .bind(a.to_string())
        .execute(store.pool())
        .await;
    assert!(dup.is_err(), "UNIQUE(run_id, seq) must hold");
    Ok(())
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn an_intent_settles_once(#[case] backend: Backend) -> anyhow::Result<()> {
    let (_d, store) = fresh(backend).await?;
    let run = insert_run(&store).await?;
    let mut tx = store.begin().await?;
    steps::insert(&mut tx, run, &step(1)).await?;
    intents::insert(&mut tx, run, &intent(1)).await?;
    tx.commit().await?;
    assert_eq!(intents::pending(store.pool(), run).await?.len(), 1);
    let mut tx = store.begin().await?;
    let (confirmed, done) = (IntentStatus::Confirmed, StepStatus::Done);
    let settling = |result, ends_processes| intents::Settling {
        step_seq: 1,
        status: confirmed,
        step_status: done,
        result,
        settled_by: None,
        ends_processes,
    };
    intents::settle_with_step(&mut tx, run, settling("ok", true), 2, None).await?;
    assert!(
        intents::settle_with_step(&mut tx, run, settling("again", false), 3, None)
            .await
            .is_err(),
        "settling the intent and its step together still settles the intent once"
    );
    assert!(
        intents::settle(&mut tx, run, 1, confirmed, "again", None, 3)
            .await
            .is_err()
    );
    tx.commit().await?;
    assert!(intents::pending(store.pool(), run).await?.is_empty());
    Ok(())
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn audit_events_chain(#[case] backend: Backend) -> anyhow::Result<()> {
    let (_d, store) = fresh(backend).await?;
    let mut tx = store.begin().await?;
    audit::append_raw(
        &mut tx,
        audit::Actor::User,
        "a",
        None,
        &serde_json::json!({"x": 1}),
        1,
    )
    .await?;
    audit::append_raw(
        &mut tx,
        audit::Actor::Harness,
        "b",
        None,
        &serde_json::json!({}),
        2,
    )
    .await?;
    tx.commit().await?;
    let events = audit::all(store.pool()).await?;
    assert_eq!(events[0].prev_hash, audit::GENESIS);
    assert_eq!(
        events[1].prev_hash, events[0].hash,
        "each event names the hash before it"
    );
    Ok(())
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn a_stale_owner_cannot_append_so_its_transaction_cannot_commit_a_change(#[case] backend: Backend) -> anyhow::Result<()> {
    let (_d, store) = fresh(backend).await?;
    let id = insert_run(&store).await?;
    let mut tx = store.begin().await?;
    let (fence, _) = runs::claim(&mut tx, id, &running("w1", 0, 100, 1)).await?;
    tx.commit().await?;
    let old = audit::Owner::new(id, fence);
    let event = audit::Event::new(
        audit::Actor::Harness,
        Some(id),
        crate::event::Reason { reason: "x".into() },
    );

    // w1 appends while it owns the run, and so remembers the head.
    let mut tx = store.begin().await?;
    audit::append_all(&mut tx, Some(&old), std::slice::from_ref(&event), 2).await?;
    tx.commit().await?;

    // w2 takes over.
    let mut tx = store.begin().await?;
    runs::claim(&mut tx, id, &running("w2", 1, 300, 150)).await?;
    tx.commit().await?;

    let mut tx = store.begin().await?;
    let stale = audit::append_all(&mut tx, Some(&old), std::slice::from_ref(&event), 3).await;
    assert!(
        matches!(stale, Err(StoreError::LostLease { .. })),
        "the old fence must be refused: {stale:?}"
    );
    drop(tx);

    let new = audit::Owner::new(id, fence + 1);
    for round in 0..3 {
        let mut tx = store.begin().await?;
        audit::append_all(&mut tx, Some(&new), &[event.clone(), event.clone()], 3).await?;
        tx.commit().await?;
        if round == 1 {
            // Someone else appends in between: w2's remembered head is stale and must not be trusted.
            let mut tx = store.begin().await?;
            audit::append_raw(
                &mut tx,
                audit::Actor::User,
                "y",
                None,
                &serde_json::json!({}),
                4,
            )
            .await?;
            tx.commit().await?;
        }
    }
    let events = audit::all(store.pool()).await?;
    assert_eq!(
        events.len(),
        1 + 6 + 1,
        "w1's one event, w2's six, the other writer's one"
    );
    let mut prev = audit::GENESIS.to_owned();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as i64 + 1, "seqs are contiguous");
        assert_eq!(
            e.prev_hash, prev,
            "event {} chains to the one before",
            e.seq
        );
        assert_eq!(audit::chain_hash(&prev, &e.canonical()).as_str(), e.hash);
        prev = e.hash.clone();
    }
    Ok(())
}

#[rstest]
#[case::sqlite(Backend::Sqlite)]
#[case::postgres(Backend::Postgres)]
#[tokio::test]
async fn a_row_that_does_not_decode_is_damage_naming_the_row_never_a_default(#[case] backend: Backend) -> anyhow::Result<()>
{
    let (_d, store) = fresh(backend).await?;
    let id = insert_run(&store).await?;
    sqlx::query("UPDATE runs SET compat = 'not json' WHERE id = $1")
        .bind(id.to_string())
        .execute(store.pool())
        .await?;
    let err = runs::get(store.pool(), id)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("an unreadable compat must not read as empty"))?;
    let text = err.to_string();
    assert!(
        matches!(err, StoreError::Damaged { table: "runs", .. }),
        "{err:?}"
    );
    assert!(
        text.contains(&id.to_string()) && text.contains("compat"),
        "the error names the row and the column: {text}"
    );
    let listed = runs::list(store.pool()).await;
    assert!(
        matches!(listed, Err(StoreError::Damaged { .. })),
        "a list does not skip the damaged row: {listed:?}"
    );

    let ok = insert_run(&store).await?;
    sqlx::query(
        "INSERT INTO steps (run_id, seq, kind, tool, action, action_hash, status, started_at)
         VALUES ($1, 1, 'tool_call', 'fs.read', '{\"tool\":\"fs.read\",\"args\":{}}', 'h', 'flying', 1)",
    )
    .bind(ok.to_string())
    .execute(store.pool())
    .await?;
    let err = steps::list(store.pool(), ok)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("an unknown status must not decode"))?;
    let text = err.to_string();
    assert!(
        text.contains("steps") && text.contains("seq 1") && text.contains("status"),
        "{text}"
    );
    Ok(())
}

fn call() -> RecordedCall {
    RecordedCall::raw(ToolCall {
        tool: "fs.write".into(),
        args: serde_json::json!({"path": "a", "content": "b"}),
    })
}

/// A running `fs.write` step at `seq`.
pub(super) fn step(seq: i64) -> steps::StepRow {
    steps::StepRow {
        seq,
        kind: StepKind::ToolCall,
        tool: "fs.write".into(),
        action: call(),
        action_hash: "h".into(),
        why: None,
        status: StepStatus::Running,
        risk: None,
        reasons: None,
        preview: None,
        result: None,
        started_at: 1,
        ended_at: None,
    }
}

/// The pending intent of the step at `seq`.
pub(super) fn intent(seq: i64) -> intents::IntentRow {
    intents::IntentRow {
        id: crate::ids::IntentId::new().to_string(),
        step_seq: seq,
        tool: "fs.write".into(),
        action: call(),
        action_hash: "h".into(),
        effect_class: EffectClass::Idempotent,
        status: IntentStatus::Pending,
        pre_images: Vec::new(),
        post_images: Vec::new(),
        result: None,
        settled_by: None,
        fence: 1,
        created_at: 1,
        settled_at: None,
    }
}
