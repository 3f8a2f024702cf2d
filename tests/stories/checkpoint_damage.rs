//! A damaged or missing checkpoint: the recovery point falls back to the last good one before it,
//! the damage is reported (in the run's detail and as an audit event), and resuming from the earlier
//! point reuses the journal instead of running effects again.

use std::sync::Arc;

use reins_core::api::{DamageKind, DriveOutcome, Options, Reins, RunId, RunState, Silent};
use reins_tests::{example_plan, raw_db, PermitAll, Sandbox};

/// Runs tidy-configs to completion; returns the run id. Checkpoints: 1 created, 2–5 steps, 6 finished.
async fn finished_run(sb: &Sandbox) -> anyhow::Result<RunId> {
    let engine = sb.reins(Arc::new(PermitAll)).await?;
    let id = engine
        .create_run(&example_plan("tidy-configs.toml")?, &sb.ws(), &Silent)
        .await?;
    let outcome = engine.drive(id, &Silent).await?;
    assert!(
        matches!(
            outcome,
            DriveOutcome::Finished {
                state: RunState::Succeeded,
                ..
            }
        ),
        "{outcome:?}"
    );
    engine.close().await;
    Ok(id)
}

/// Pretends the worker died mid-run: back to running with an expired lease.
async fn abandon(reins: &Reins, id: RunId) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE runs SET state = 'running', lease_until = 0, last_error = NULL WHERE id = $1",
    )
    .bind(id.to_string())
    .execute(&raw_db(reins).await?)
    .await?;
    Ok(())
}

async fn count(reins: &Reins, sql: &str, id: RunId) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(sql)
        .bind(id.to_string())
        .fetch_one(&raw_db(reins).await?)
        .await?)
}

#[tokio::test]
async fn a_flipped_byte_moves_the_recovery_point_back_and_is_reported() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let id = finished_run(&sb).await?;
    let reins = Reins::open(
        sb.data(),
        Options {
            database: sb.database.clone(),
            ..Options::default()
        },
    )
    .await?;

    let payload: Vec<u8> =
        sqlx::query_scalar("SELECT payload FROM checkpoints WHERE run_id = $1 AND seq = 4")
            .bind(id.to_string())
            .fetch_one(&raw_db(&reins).await?)
            .await?;
    let mut flipped = payload.clone();
    flipped[payload.len() / 2] ^= 0x20;
    sqlx::query("UPDATE checkpoints SET payload = $1 WHERE run_id = $2 AND seq = 4")
        .bind(&flipped)
        .bind(id.to_string())
        .execute(&raw_db(&reins).await?)
        .await?;

    let detail = reins.run_detail(id).await?;
    assert_eq!(
        detail.recovery.point,
        Some(3),
        "checkpoint 4 is damaged, so the prefix ends at 3"
    );
    assert_eq!(detail.recovery.damage.len(), 1);
    assert_eq!(
        (
            detail.recovery.damage[0].seq,
            detail.recovery.damage[0].kind
        ),
        (4, DamageKind::Checksum)
    );
    assert!(
        detail.checkpoints[3].status.contains("checksum mismatch"),
        "{}",
        detail.checkpoints[3].status
    );

    let files_before = (
        sb.read("docs/RUNBOOK.md")?,
        sb.ws().join("archive/nginx.conf.bak").exists(),
    );
    let intents_before =
        count(&reins, "SELECT COUNT(*) FROM intents WHERE run_id = $1", id).await?;
    abandon(&reins, id).await?;
    let outcome = reins.drive(id, &Silent).await?;
    assert!(
        matches!(
            outcome,
            DriveOutcome::Finished {
                state: RunState::Succeeded,
                ..
            }
        ),
        "{outcome:?}"
    );

    let events = reins_tests::events(&reins, Some(id)).await?;
    let damage: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "checkpoint.damage_detected")
        .collect();
    assert_eq!(damage.len(), 1, "the damage is recorded once as an event");
    assert!(
        damage[0].payload.to_string().contains("\"seq\":4"),
        "{}",
        damage[0].payload
    );
    assert_eq!(
        count(&reins, "SELECT COUNT(*) FROM intents WHERE run_id = $1", id).await?,
        intents_before,
        "resuming from an earlier checkpoint must not create new effects"
    );
    assert_eq!(
        (
            sb.read("docs/RUNBOOK.md")?,
            sb.ws().join("archive/nginx.conf.bak").exists()
        ),
        files_before
    );

    let after = reins.run_detail(id).await?;
    assert!(
        after.recovery.damage.iter().all(|d| d.acknowledged),
        "known damage is stepped over afterwards"
    );
    assert!(
        after.recovery.point > Some(6),
        "new checkpoints extend the prefix past the recovered damage"
    );
    Ok(())
}

#[tokio::test]
async fn a_missing_checkpoint_is_a_gap() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let id = finished_run(&sb).await?;
    let reins = Reins::open(
        sb.data(),
        Options {
            database: sb.database.clone(),
            ..Options::default()
        },
    )
    .await?;
    sqlx::query("DELETE FROM checkpoints WHERE run_id = $1 AND seq = 3")
        .bind(id.to_string())
        .execute(&raw_db(&reins).await?)
        .await?;
    let detail = reins.run_detail(id).await?;
    assert_eq!(detail.recovery.point, Some(2));
    assert_eq!(detail.recovery.damage[0].kind, DamageKind::Gap);
    assert_eq!(detail.recovery.damage[0].seq, 3);

    abandon(&reins, id).await?;
    let outcome = reins.drive(id, &Silent).await?;
    assert!(
        matches!(
            outcome,
            DriveOutcome::Finished {
                state: RunState::Succeeded,
                ..
            }
        ),
        "{outcome:?}"
    );
    let reused: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_events WHERE run_id = $1 AND kind = 'intent.pending'",
    )
    .bind(id.to_string())
    .fetch_one(&raw_db(&reins).await?)
    .await?;
    assert_eq!(
        reused, 3,
        "still exactly one intent per effect (move, delete, edit)"
    );
    Ok(())
}
