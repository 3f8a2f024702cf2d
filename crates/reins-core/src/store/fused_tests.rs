//! A step's checkpoint and events travelling in its rows' statement on PostgreSQL
//! (`store::fused`): they land where the separate statements would have put them, or not at all.

use super::checkpoints::{Body, NewCheckpoint};
use super::fused::{Landed, Tail};
use super::tests::{fresh, insert_run, intent, step, Backend};
use super::*;
use crate::event::{self as ev, Actor};
use crate::checkpoint::Level;
use crate::ids::RunId;
use crate::journal::IntentStatus;
use crate::step::StepStatus;

fn settling(seq: i64) -> intents::Settling<'static> {
    intents::Settling {
        step_seq: seq,
        status: IntentStatus::Confirmed,
        step_status: StepStatus::Done,
        result: "ok",
        settled_by: None,
        ends_processes: false,
    }
}

fn checkpoint() -> NewCheckpoint<'static> {
    NewCheckpoint {
        level: Level::Step,
        schema_version: 1,
        body: Body::Inline(b"{}"),
        size: 2,
        sha256: "cp",
        created_at: 1,
    }
}

fn written(run: RunId, seq: i64) -> audit::Event {
    audit::Event::new(
        Actor::Harness,
        Some(run),
        ev::CheckpointWritten {
            seq,
            level: Level::Step,
            sha256: "cp".into(),
            size: 2,
        },
    )
}

/// A running run held at fence 1, whose owner remembers the chain head and checkpoint 1.
async fn held(store: &Store) -> anyhow::Result<(RunId, audit::Owner)> {
    let run = insert_run(store).await?;
    sqlx::query("UPDATE runs SET state = 'running', fence = 1 WHERE id = $1")
        .bind(run.to_string())
        .execute(store.pool())
        .await?;
    let owner = audit::Owner::new(run, 1);
    let mut tx = store.begin().await?;
    checkpoints::insert(&mut tx, run, &checkpoint()).await?;
    audit::append_all(&mut tx, Some(&owner), &[written(run, 1)], 1).await?;
    tx.commit().await?;
    owner.wrote_checkpoint(1);
    Ok((run, owner))
}

/// Someone else appends: the head the owner remembers is no longer the head.
async fn another_appends(store: &Store, run: RunId) -> anyhow::Result<()> {
    let mut tx = store.begin().await?;
    audit::append(&mut tx, written(run, 1), 2).await?;
    tx.commit().await?;
    Ok(())
}

/// The owner learns the true head again, then the run is taken over (fence 2).
async fn taken_over(store: &Store, run: RunId, owner: &audit::Owner) -> anyhow::Result<()> {
    let mut tx = store.begin().await?;
    audit::append_all(&mut tx, Some(owner), &[written(run, 1)], 4).await?;
    tx.commit().await?;
    sqlx::query("UPDATE runs SET fence = 2 WHERE id = $1")
        .bind(run.to_string())
        .execute(store.pool())
        .await?;
    Ok(())
}

/// The events of the chain, in order: (kind, prev_hash, hash).
async fn chain(store: &Store) -> anyhow::Result<Vec<(String, String, String)>> {
    Ok(
        sqlx::query_as("SELECT kind, prev_hash, hash FROM audit_events ORDER BY seq")
            .fetch_all(store.pool())
            .await?,
    )
}

fn linked(events: &[(String, String, String)]) -> bool {
    events.windows(2).all(|w| w[1].1 == w[0].2)
}

async fn checkpoint_seqs(store: &Store, run: RunId) -> anyhow::Result<Vec<i64>> {
    Ok(
        sqlx::query_scalar("SELECT seq FROM checkpoints WHERE run_id = $1 ORDER BY seq")
            .bind(run.to_string())
            .fetch_all(store.pool())
            .await?,
    )
}

#[tokio::test]
async fn a_steps_checkpoint_and_events_land_with_its_rows_when_foreseen() -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Postgres).await?;
    let (run, owner) = held(&store).await?;

    // The intent carries its events.
    let mut tx = store.begin().await?;
    let events = [written(run, 1)];
    // Under a key: the events' MACs travel in the same statement.
    let key = super::vouch::AuditKey::of(&[3; 32]);
    let tail = Tail::new(&owner, None, &events, 2, Some(&key)).ok_or_else(|| anyhow::anyhow!("the owner remembers its head"))?;
    let counts = intents::insert_with_step(&mut tx, run, &step(1), &intent(1), &[], Some(&tail))
        .await?;
    assert_eq!(counts, (0, 1));
    assert_eq!(
        tail.landed(&mut tx, counts.0, counts.1),
        Landed {
            checkpoint: false,
            events: true
        }
    );
    tx.commit().await?;
    let (hash, mac): (String, Option<String>) =
        sqlx::query_as("SELECT hash, mac FROM audit_events ORDER BY seq DESC LIMIT 1")
            .fetch_one(store.pool())
            .await?;
    assert_eq!(
        mac.as_deref().map(|m| key.check(&hash, m)),
        Some(super::vouch::Check::Holds)
    );

    // The settling carries checkpoint 2 and its event.
    let mut tx = store.begin().await?;
    let cp = checkpoint();
    let events = [written(run, 2)];
    let tail = Tail::new(&owner, Some((2, &cp)), &events, 3, None).ok_or_else(|| anyhow::anyhow!("foreseen"))?;
    let counts = intents::settle_with_step(&mut tx, run, settling(1), 3, Some(&tail)).await?;
    assert_eq!(counts, (1, 1));
    assert_eq!(
        tail.landed(&mut tx, counts.0, counts.1),
        Landed {
            checkpoint: true,
            events: true
        }
    );
    tx.commit().await?;

    assert_eq!(checkpoint_seqs(&store, run).await?, [1, 2]);
    let events = chain(&store).await?;

    assert!(linked(&events), "one unbroken chain: {events:?}");
    assert!(intents::pending(store.pool(), run).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn a_checkpoint_not_at_the_runs_next_seq_lands_nothing_of_the_tail() -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Postgres).await?;
    let (run, owner) = held(&store).await?;
    let mut tx = store.begin().await?;
    intents::insert_with_step(&mut tx, run, &step(1), &intent(1), &[], None).await?;
    tx.commit().await?;
    let before = chain(&store).await?.len();

    // The owner foresees seq 3, but the run's next is 2.
    let mut tx = store.begin().await?;
    let cp = checkpoint();
    let events = [written(run, 3)];
    let tail = Tail::new(&owner, Some((3, &cp)), &events, 3, None).ok_or_else(|| anyhow::anyhow!("foreseen"))?;
    let counts = intents::settle_with_step(&mut tx, run, settling(1), 3, Some(&tail)).await?;
    assert_eq!(counts, (0, 0), "neither the checkpoint nor, without it, its events");
    assert_eq!(tail.landed(&mut tx, counts.0, counts.1), Landed::default());
    tx.commit().await?;
    assert_eq!(checkpoint_seqs(&store, run).await?, [1]);
    assert_eq!(chain(&store).await?.len(), before);
    assert!(
        intents::pending(store.pool(), run).await?.is_empty(),
        "the rows themselves landed"
    );
    Ok(())
}

#[tokio::test]
async fn events_after_a_head_that_moved_or_for_a_run_lost_do_not_land() -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Postgres).await?;
    let (run, owner) = held(&store).await?;

    another_appends(&store, run).await?;
    let mut tx = store.begin().await?;
    let events = [written(run, 1)];
    let tail = Tail::new(&owner, None, &events, 3, None).ok_or_else(|| anyhow::anyhow!("remembered"))?;
    let counts = intents::insert_with_step(&mut tx, run, &step(1), &intent(1), &[], Some(&tail))
        .await?;
    assert_eq!(counts, (0, 0));
    drop(tx);

    // The run is taken over (fence 2): even with the true head, the old owner appends nothing.
    taken_over(&store, run, &owner).await?;
    let mut tx = store.begin().await?;
    let tail = Tail::new(&owner, None, &events, 5, None).ok_or_else(|| anyhow::anyhow!("remembered"))?;
    let counts = intents::insert_with_step(&mut tx, run, &step(1), &intent(1), &[], Some(&tail))
        .await?;
    assert_eq!(counts, (0, 0));
    drop(tx);
    assert!(linked(&chain(&store).await?));
    Ok(())
}

/// Intent and settling as `held`'s owner writes them, each as one statement with no transaction
/// around it (`Store::begin_single`): `Err` when the statement was refused.
async fn single_step(store: &Store, run: RunId, owner: &audit::Owner, cp_seq: i64) -> anyhow::Result<()> {
    let mut tx = store.begin_single().await?;
    let events = [written(run, 1)];
    let tail = Tail::new(owner, None, &events, 2, None).ok_or_else(|| anyhow::anyhow!("remembered"))?;
    let counts = intents::insert_with_step(&mut tx, run, &step(1), &intent(1), &[], Some(&tail))
        .await?;
    assert!(tail.landed(&mut tx, counts.0, counts.1).events);
    tx.commit().await?;
    let mut tx = store.begin_single().await?;
    let cp = checkpoint();
    let events = [written(run, cp_seq)];
    let tail = Tail::new(owner, Some((cp_seq, &cp)), &events, 3, None).ok_or_else(|| anyhow::anyhow!("foreseen"))?;
    let counts = intents::settle_with_step(&mut tx, run, settling(1), 3, Some(&tail)).await?;
    assert_eq!(counts, (1, 1));
    tail.landed(&mut tx, counts.0, counts.1);
    tx.commit().await?;
    Ok(())
}

#[tokio::test]
async fn a_step_lands_whole_in_one_statement_with_no_transaction_around_it() -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Postgres).await?;
    let (run, owner) = held(&store).await?;
    let before = chain(&store).await?.len();
    single_step(&store, run, &owner, 2).await?;
    assert_eq!(checkpoint_seqs(&store, run).await?, [1, 2]);
    let events = chain(&store).await?;
    assert_eq!(events.len(), before + 2);
    assert!(linked(&events), "one unbroken chain: {events:?}");
    assert!(intents::pending(store.pool(), run).await?.is_empty());
    Ok(())
}

/// What a refused single statement leaves: (pending intents, checkpoint seqs, chain length).
async fn left(store: &Store, run: RunId) -> anyhow::Result<(usize, Vec<i64>, usize)> {
    Ok((
        intents::pending(store.pool(), run).await?.len(),
        checkpoint_seqs(store, run).await?,
        chain(store).await?.len(),
    ))
}

/// Tries the step as single statements: the database must refuse it, leaving `before` as it was.
async fn refused_leaving(
    store: &Store,
    run: RunId,
    owner: &audit::Owner,
    before: &(usize, Vec<i64>, usize),
) -> anyhow::Result<()> {
    let err = single_step(store, run, owner, 2)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("the step landed"))?;
    assert!(refused(&err), "{err}");
    assert_eq!(&left(store, run).await?, before);
    Ok(())
}

/// The database refused the statement (so its transaction, the statement alone, rolled back).
fn refused(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<StoreError>(),
        Some(StoreError::Sqlx(sqlx::Error::Database(_)))
    )
}

#[tokio::test]
async fn a_single_statement_that_cannot_land_whole_writes_nothing() -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Postgres).await?;
    let (run, owner) = held(&store).await?;
    let mut tx = store.begin_single().await?;
    let events = [written(run, 1)];
    let tail = Tail::new(&owner, None, &events, 2, None).ok_or_else(|| anyhow::anyhow!("remembered"))?;
    intents::insert_with_step(&mut tx, run, &step(1), &intent(1), &[], Some(&tail)).await?;
    tail.landed(&mut tx, 0, 1);
    tx.commit().await?;
    let before = left(&store, run).await?;
    assert_eq!((before.0, before.1.as_slice()), (1, [1].as_slice()));

    // The checkpoint foreseen at 3 where the run's next is 2: the settling's own rows would
    // land, but not whole, so nothing does.
    let mut tx = store.begin_single().await?;
    let cp = checkpoint();
    let events = [written(run, 3)];
    let tail = Tail::new(&owner, Some((3, &cp)), &events, 3, None).ok_or_else(|| anyhow::anyhow!("foreseen"))?;
    let err = intents::settle_with_step(&mut tx, run, settling(1), 3, Some(&tail))
        .await
        .map_err(anyhow::Error::from)
        .err()
        .ok_or_else(|| anyhow::anyhow!("landed in part"))?;
    assert!(refused(&err), "{err}");
    drop(tx);
    assert_eq!(left(&store, run).await?, before, "the intent still pending, nothing added");
    Ok(())
}

#[tokio::test]
async fn a_single_statement_from_an_owner_fenced_out_or_behind_the_head_writes_nothing(
) -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Postgres).await?;
    let (run, owner) = held(&store).await?;

    // Someone else appended: the owner's remembered head is stale.
    another_appends(&store, run).await?;
    refused_leaving(&store, run, &owner, &left(&store, run).await?).await?;

    // The run is taken over (fence 2); the owner learns the true head, yet writes nothing.
    taken_over(&store, run, &owner).await?;
    refused_leaving(&store, run, &owner, &left(&store, run).await?).await?;
    assert!(linked(&chain(&store).await?));
    Ok(())
}

/// A writer in its transaction holds the write lock: a single statement does not wait for it,
/// or write beside it; it is refused, and lands once the lock is free.
#[tokio::test]
async fn a_single_statement_never_writes_while_another_holds_the_write_lock() -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Postgres).await?;
    let (run, owner) = held(&store).await?;
    let holder = store.begin().await?;
    refused_leaving(&store, run, &owner, &left(&store, run).await?).await?;
    // Ended now (a dropped transaction's rollback would be sent later, with the lock held until then).
    holder.commit().await?;
    single_step(&store, run, &owner, 2).await?;
    assert_eq!(checkpoint_seqs(&store, run).await?, [1, 2]);
    assert!(linked(&chain(&store).await?));
    Ok(())
}

/// The fence moves while a single statement runs (its snapshot still shows the old one): the
/// statement sees the move all the same, and writes nothing.
#[tokio::test]
async fn a_single_statement_sees_a_fence_moved_after_it_began() -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Postgres).await?;
    let (run, owner) = held(&store).await?;
    let before = left(&store, run).await?;
    // A take-over in flight, not yet committed.
    let mut mover = store.pool().begin().await?;
    sqlx::query("UPDATE runs SET fence = 2 WHERE id = $1")
        .bind(run.to_string())
        .execute(&mut *mover)
        .await?;
    let (written, moved) = tokio::join!(single_step(&store, run, &owner, 2), async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        mover.commit().await
    });
    moved?;
    let err = written.err().ok_or_else(|| anyhow::anyhow!("a fenced-out owner's step landed"))?;
    assert!(refused(&err), "{err}");
    assert_eq!(left(&store, run).await?, before);
    Ok(())
}
