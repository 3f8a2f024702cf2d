use std::path::Path;

use super::verify::DamageKind;
use super::*;
use crate::event::{ExportFormat, Filter};
use crate::store::audit::{self as table, Actor, AuditRow, Canon, GENESIS};
use crate::store::Store;

type TestResult = anyhow::Result<()>;

async fn store_with(dir: &Path, n: usize) -> anyhow::Result<Store> {
    std::fs::create_dir_all(dir)?;
    let store = Store::open(&dir.join("reins.db")).await?;
    append(&store, n).await?;
    Ok(store)
}

async fn append(store: &Store, n: usize) -> anyhow::Result<()> {
    for i in 0..n {
        let mut tx = store.begin().await?;
        let kind = if i % 2 == 0 {
            "run.state_changed"
        } else {
            "approval.approved"
        };
        table::append_raw(
            &mut tx,
            Actor::Harness,
            kind,
            None,
            &serde_json::json!({ "i": i, "step": i }),
            1_000 + i as i64,
        )
        .await?;
        tx.commit().await?;
    }
    store.anchor().flush();
    Ok(())
}

async fn exec(store: &Store, sql: &str) -> anyhow::Result<()> {
    sqlx::query(sql).execute(store.pool()).await?;
    Ok(())
}

/// The damage verification names, walking the chain in one stretch and in two (as on a large log):
/// both must say the same.
async fn damage_of(store: &Store) -> anyhow::Result<(DamageKind, Option<i64>)> {
    let mut seen = Vec::new();
    for split_at in [i64::MAX, 2] {
        let v = verify::verify_split(store, split_at).await?;
        assert!(!v.intact, "the damage must be seen: {v:?}");
        let d = v.damage.ok_or_else(|| anyhow::anyhow!("no damage named"))?;
        seen.push((d.kind, d.seq));
    }
    assert_eq!(seen[0], seen[1], "one stretch and two agree");
    Ok(seen[0])
}

/// Rows a forger computes without touching the anchor: self-consistent from `from` on.
fn forged(from_seq: i64, prev: &str, n: i64) -> Vec<AuditRow> {
    let mut prev = prev.to_owned();
    (from_seq..from_seq + n)
        .map(|seq| {
            let payload = format!(r#"{{"forged":{seq}}}"#);
            let canon = table::canonical(&Canon {
                seq,
                at: 5,
                actor: "user",
                kind: "run.created",
                run: None,
                step: None,
                approval: None,
                payload: &payload,
            });
            let hash = table::chain_hash(&prev, &canon).to_string();
            AuditRow {
                seq,
                at: 5,
                actor: "user".into(),
                kind: "run.created".into(),
                run_id: None,
                step_seq: None,
                approval_id: None,
                payload,
                prev_hash: std::mem::replace(&mut prev, hash.clone()),
                hash,
                mac: None,
            }
        })
        .collect()
}

async fn insert_raw(store: &Store, rows: &[AuditRow]) -> anyhow::Result<()> {
    for r in rows {
        sqlx::query("INSERT INTO audit_events (seq, at, actor, kind, run_id, step_seq, approval_id, payload, prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)")
            .bind(r.seq).bind(r.at).bind(&r.actor).bind(&r.kind).bind(&r.run_id).bind(r.step_seq)
            .bind(&r.approval_id).bind(&r.payload).bind(&r.prev_hash).bind(&r.hash)
            .execute(store.pool()).await?;
    }
    Ok(())
}

#[tokio::test]
async fn an_untouched_log_verifies_and_its_anchor_agrees() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 40).await?;
    for split_at in [i64::MAX, 2] {
        let v = verify::verify_split(&store, split_at).await?;
        assert!(v.intact, "{v:?}");
        assert_eq!(v.events, 40);
        assert_eq!(v.anchor.status, "agrees");
        assert_eq!(v.head.map(|h| h.seq), Some(40));
    }
    Ok(())
}

#[tokio::test]
async fn each_kind_of_tampering_is_named_with_its_seq() -> TestResult {
    let dir = tempfile::tempdir()?;

    let store = store_with(&dir.path().join("edit"), 20).await?;
    exec(
        &store,
        r#"UPDATE audit_events SET payload = '{"i":7,"step":70}' WHERE seq = 8"#,
    )
    .await?;
    assert_eq!(damage_of(&store).await?, (DamageKind::Edited, Some(8)));

    let store = store_with(&dir.path().join("column"), 20).await?;
    exec(
        &store,
        "UPDATE audit_events SET step_seq = 99 WHERE seq = 4",
    )
    .await?;
    assert_eq!(
        damage_of(&store).await?,
        (DamageKind::Edited, Some(4)),
        "the id columns are hashed too"
    );

    let store = store_with(&dir.path().join("delete"), 20).await?;
    exec(&store, "DELETE FROM audit_events WHERE seq = 11").await?;
    assert_eq!(damage_of(&store).await?, (DamageKind::Deleted, Some(11)));

    let store = store_with(&dir.path().join("renumber"), 20).await?;
    exec(&store, "DELETE FROM audit_events WHERE seq = 6").await?;
    exec(
        &store,
        "UPDATE audit_events SET seq = -(seq - 1) WHERE seq > 6",
    )
    .await?;
    exec(&store, "UPDATE audit_events SET seq = -seq WHERE seq < 0").await?;
    assert_eq!(
        damage_of(&store).await?,
        (DamageKind::Deleted, Some(6)),
        "removed and closed up"
    );

    let store = store_with(&dir.path().join("swap"), 20).await?;
    exec(
        &store,
        "UPDATE audit_events SET seq = -seq WHERE seq IN (5, 9)",
    )
    .await?;
    exec(&store, "UPDATE audit_events SET seq = 9 WHERE seq = -5").await?;
    exec(&store, "UPDATE audit_events SET seq = 5 WHERE seq = -9").await?;
    assert_eq!(damage_of(&store).await?, (DamageKind::Reordered, Some(5)));

    // Right where two stretches meet (20 events split at seq 11).
    let store = store_with(&dir.path().join("boundary"), 20).await?;
    exec(&store, "DELETE FROM audit_events WHERE seq = 10").await?;
    assert_eq!(damage_of(&store).await?, (DamageKind::Deleted, Some(10)));
    let store = store_with(&dir.path().join("boundary2"), 20).await?;
    exec(
        &store,
        r#"UPDATE audit_events SET payload = '{}' WHERE seq = 11"#,
    )
    .await?;
    assert_eq!(damage_of(&store).await?, (DamageKind::Edited, Some(11)));

    let store = store_with(&dir.path().join("truncate"), 20).await?;
    exec(&store, "DELETE FROM audit_events WHERE seq > 14").await?;
    assert_eq!(damage_of(&store).await?, (DamageKind::Truncated, Some(15)));

    let store = store_with(&dir.path().join("empty"), 20).await?;
    exec(&store, "DELETE FROM audit_events").await?;
    assert_eq!(
        damage_of(&store).await?,
        (DamageKind::Truncated, Some(1)),
        "an emptied log"
    );

    let store = store_with(&dir.path().join("replace"), 20).await?;
    exec(&store, "DELETE FROM audit_events").await?;
    insert_raw(&store, &forged(1, GENESIS, 25)).await?;
    assert_eq!(damage_of(&store).await?, (DamageKind::Replaced, Some(1)));

    // Rewritten from seq 12 on, consistently: only the anchor's head can tell.
    let store = store_with(&dir.path().join("rewrite"), 20).await?;
    let prev: String = sqlx::query_scalar("SELECT hash FROM audit_events WHERE seq = 11")
        .fetch_one(store.pool())
        .await?;
    exec(&store, "DELETE FROM audit_events WHERE seq >= 12").await?;
    insert_raw(&store, &forged(12, &prev, 9)).await?;
    let v = verify::verify(&store).await?;
    let d = v.damage.ok_or_else(|| anyhow::anyhow!("rewrite unseen"))?;
    assert_eq!(
        (d.kind, d.seq),
        (DamageKind::Replaced, Some(2)),
        "{}",
        d.detail
    );
    assert!(
        d.detail.contains("seq 20"),
        "names where it saw it: {}",
        d.detail
    );
    Ok(())
}

#[tokio::test]
async fn a_damaged_log_is_not_written_to_by_verification() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 5).await?;
    let v = verify::verify(&store).await?;
    verify::record(&store, &v).await?;
    exec(&store, "DELETE FROM audit_events WHERE seq = 6").await?;
    assert_eq!(damage_of(&store).await?, (DamageKind::Truncated, Some(6)));
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM audit_events")
        .fetch_one(store.pool())
        .await?;
    assert_eq!(n, 5);
    Ok(())
}

#[tokio::test]
async fn an_unreadable_anchor_is_damage_and_is_never_overwritten() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 3).await?;
    std::fs::write(store.anchor().path(), b"garbage")?;
    assert_eq!(damage_of(&store).await?.0, DamageKind::AnchorUnreadable);
    append(&store, 2).await?;
    assert_eq!(std::fs::read(store.anchor().path())?, b"garbage");
    Ok(())
}

#[tokio::test]
async fn a_missing_anchor_is_recreated_on_open_and_that_is_recorded() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 3).await?;
    std::fs::remove_file(store.anchor().path())?;
    store.close().await;
    let store = Store::open(&dir.path().join("reins.db")).await?;
    let v = verify::verify(&store).await?;
    // F14: nothing vouched for the three events before it; that fails until a person accepts it.
    assert!(!v.intact, "{v:?}");
    assert_eq!(
        v.damage.as_ref().map(|d| (d.kind, d.seq)),
        Some((DamageKind::AnchorRecreated, Some(4)))
    );
    assert_eq!(v.anchor_created_at, [4]);
    assert_eq!(verify::acknowledge(&store, "user:test").await?, Some(4));
    let v = verify::verify(&store).await?;
    assert!(v.intact, "{v:?}");
    let head = store
        .anchor()
        .read()?
        .ok_or_else(|| anyhow::anyhow!("no anchor"))?;
    assert_eq!(head.head.seq, 5, "the re-creation at 4, the acknowledgement at 5");
    assert_eq!(head.marks.first().map(|m| m.seq), Some(1));
    Ok(())
}

#[tokio::test]
async fn the_anchor_keeps_its_head_when_another_process_lags() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 3).await?;
    // A slower writer arriving with an older head moves nothing back.
    store.anchor().advance(&[crate::event::Mark {
        seq: 2,
        hash: "x".into(),
    }])?;
    let head = store
        .anchor()
        .read()?
        .ok_or_else(|| anyhow::anyhow!("no anchor"))?;
    assert_eq!(head.head.seq, 3);
    assert!(verify::verify(&store).await?.intact);
    Ok(())
}

fn export_req(out: &Path, format: ExportFormat, filter: Filter) -> ExportRequest {
    ExportRequest {
        format,
        out: out.to_owned(),
        filter,
        overwrite: false,
    }
}

#[tokio::test]
async fn an_export_verifies_on_its_own_and_one_changed_byte_fails_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(&dir.path().join("data"), 30).await?;
    let out = dir.path().join("log.jsonl");
    let mut calls = Vec::new();
    let summary = export::export(
        &store,
        &export_req(&out, ExportFormat::Jsonl, Filter::default()),
        &mut |done, total| calls.push((done, total)),
    )
    .await?;
    assert_eq!(
        (summary.count, summary.first_seq, summary.last_seq),
        (30, Some(1), Some(30))
    );
    assert_eq!(calls.last(), Some(&(30, 30)), "progress ends at the total");
    let check = exported::verify_export(&out)?;
    assert!(check.ok, "{check:?}");
    assert_eq!(check.events, 30);
    // The export is itself in the log.
    let last: String =
        sqlx::query_scalar("SELECT kind FROM audit_events ORDER BY seq DESC LIMIT 1")
            .fetch_one(store.pool())
            .await?;
    assert_eq!(last, "audit.exported");

    let bytes = std::fs::read(&out)?;
    for (needle, replacement) in [
        (&b"\"i\":7"[..], &b"\"i\":8"[..]),
        (b"approval.approved", b"approval.approvee"),
    ] {
        let at = bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .ok_or_else(|| anyhow::anyhow!("needle"))?;
        let mut changed = bytes.clone();
        changed[at..at + needle.len()].copy_from_slice(replacement);
        let tampered = dir.path().join("tampered.jsonl");
        std::fs::write(&tampered, &changed)?;
        let check = exported::verify_export(&tampered)?;
        assert!(!check.ok, "a changed byte must fail the check");
        assert!(check.problem.is_some_and(|p| p.line >= 1));
    }
    // A line dropped from the middle, and a cut-off file.
    let text = String::from_utf8(bytes)?;
    let lines: Vec<&str> = text.lines().collect();
    let dropped = [&lines[..10], &lines[11..]].concat().join("\n") + "\n";
    std::fs::write(dir.path().join("dropped.jsonl"), dropped)?;
    assert!(!exported::verify_export(&dir.path().join("dropped.jsonl"))?.ok);
    std::fs::write(dir.path().join("cut.jsonl"), lines[..20].join("\n"))?;
    let cut = exported::verify_export(&dir.path().join("cut.jsonl"))?;
    assert!(!cut.ok && cut.problem.is_some_and(|p| p.detail.contains("manifest")));
    Ok(())
}

#[tokio::test]
async fn filtered_exports_verify_and_csv_has_its_columns() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(&dir.path().join("data"), 20).await?;
    let out = dir.path().join("approved.jsonl");
    let filter = Filter {
        kind: Some("approval".into()),
        since: Some(1_004),
        ..Filter::default()
    };
    let s = export::export(
        &store,
        &export_req(&out, ExportFormat::Jsonl, filter),
        &mut |_, _| {},
    )
    .await?;
    assert_eq!(s.count, 8, "odd i from 5 to 19");
    let check = exported::verify_export(&out)?;
    assert!(check.ok, "{check:?}");

    let csv_out = dir.path().join("all.csv");
    let s = export::export(
        &store,
        &export_req(&csv_out, ExportFormat::Csv, Filter::default()),
        &mut |_, _| {},
    )
    .await?;
    let mut reader = csv::Reader::from_path(&csv_out)?;
    let headers: Vec<String> = reader.headers()?.iter().map(str::to_owned).collect();
    assert_eq!(
        headers,
        [
            "seq",
            "time",
            "at_ms",
            "actor",
            "kind",
            "run_id",
            "step_seq",
            "approval_id",
            "payload",
            "prev_hash",
            "hash",
            "redacted"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().collect::<Result<_, _>>()?;
    assert_eq!(rows.len() as u64, s.count);
    assert_eq!(&rows[0][8], r#"{"i":0,"step":0}"#);
    assert_eq!(&rows[0][1], "1970-01-01T00:00:01Z");
    Ok(())
}

#[tokio::test]
async fn an_existing_file_is_not_overwritten_unless_asked() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(&dir.path().join("data"), 3).await?;
    let out = dir.path().join("log.jsonl");
    std::fs::write(&out, "precious")?;
    let err = export::export(
        &store,
        &export_req(&out, ExportFormat::Jsonl, Filter::default()),
        &mut |_, _| {},
    )
    .await
    .err()
    .ok_or_else(|| anyhow::anyhow!("overwrote"))?;
    assert_eq!(err.code(), crate::ErrorCode::Conflict, "{err}");
    assert_eq!(std::fs::read_to_string(&out)?, "precious");
    let mut req = export_req(&out, ExportFormat::Jsonl, Filter::default());
    req.overwrite = true;
    export::export(&store, &req, &mut |_, _| {}).await?;
    assert!(exported::verify_export(&out)?.ok);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "no partial files stay: {leftovers:?}");
    Ok(())
}

#[tokio::test]
async fn secrets_never_reach_the_log_and_the_export_scans_again() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(&dir.path().join("data"), 2).await?;
    let key = "sk-ant-api03-Zk3vQ9xL2mR7tW1pN8sB4dF6hJ0gY5cA";
    let mut tx = store.begin().await?;
    table::append_raw(
        &mut tx,
        Actor::Agent,
        "step.finished",
        None,
        &serde_json::json!({ "error": format!("401 for key {key}") }),
        9,
    )
    .await?;
    tx.commit().await?;
    let rows = table::all(store.pool()).await?;
    assert!(
        rows.iter().all(|r| !r.payload.contains(key)),
        "redacted before the log"
    );
    assert!(rows[2].payload.contains("[redacted sha256:"));

    // A secret that got in anyway (a scanner that learned a format later): the export removes it.
    let last = rows.last().ok_or_else(|| anyhow::anyhow!("rows"))?;
    let mut planted = forged(4, &last.hash, 1);
    planted[0].payload = r#"{"note":"AKIAIOSFODNN7EXAMPLE"}"#.into();
    let canon = planted[0].canonical();
    planted[0].hash = table::chain_hash(&last.hash, &canon).to_string();
    insert_raw(&store, &planted).await?;
    store.anchor().advance(&[crate::event::Mark {
        seq: 4,
        hash: planted[0].hash.clone(),
    }])?;
    let out = dir.path().join("log.jsonl");
    let s = export::export(
        &store,
        &export_req(&out, ExportFormat::Jsonl, Filter::default()),
        &mut |_, _| {},
    )
    .await?;
    assert_eq!(s.redacted_on_export, 1);
    let text = std::fs::read_to_string(&out)?;
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE") && !text.contains(key));
    let check = exported::verify_export(&out)?;
    assert!(check.ok, "{check:?}");
    assert_eq!(check.redacted, 1);
    Ok(())
}

#[tokio::test]
async fn pages_go_back_through_the_log_by_cursor_and_filter() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 25).await?;
    let mut req = PageRequest {
        filter: Filter {
            kind: Some("run".into()),
            ..Filter::default()
        },
        limit: Some(5),
        ..PageRequest::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = query::page(&store, &req).await?;
        seen.extend(page.events.iter().map(|e| e.seq));
        match page.next {
            Some(n) => req.before = Some(n),
            None => break,
        }
    }
    let expected: Vec<i64> = (1..=25).rev().filter(|s| s % 2 == 1).collect();
    assert_eq!(seen, expected, "every run.* event once, newest first");
    req.limit = Some(0);
    assert_eq!(
        query::page(&store, &req).await.err().map(|e| e.code()),
        Some(crate::ErrorCode::InvalidInput)
    );
    Ok(())
}

/// F14: an event appended by hand, correctly chained, after the anchor was last written: the
/// anchor's writer would have included it, so it is not Reins' own.
#[tokio::test]
async fn an_event_added_behind_the_anchors_back_is_damage() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 3).await?;
    store.anchor().flush();
    let head = store
        .anchor()
        .read()?
        .ok_or_else(|| anyhow::anyhow!("no anchor"))?;
    // A forged row, chained and hashed as the harness would, dated before the anchor's write.
    let mut tx = store.begin().await?;
    crate::store::audit::append(
        &mut tx,
        crate::store::audit::Event::new(
            crate::store::audit::Actor::User,
            None,
            crate::event::AuditVerified {
                events: 0,
                head: None,
                anchor: "agrees".into(),
                elapsed_ms: 0,
            },
        ),
        head.updated_at - 60_000,
    )
    .await?;
    // Committed without moving the anchor, as a hand-edit of the database would be.
    tx.commit_without_anchor().await?;
    let v = verify::verify(&store).await?;
    assert_eq!(
        v.damage.as_ref().map(|d| d.kind),
        Some(DamageKind::Unanchored),
        "{v:?}"
    );
    Ok(())
}

mod vouch;

#[tokio::test]
async fn a_commit_that_rides_reaches_the_anchor_only_with_the_next_durable_one() -> TestResult {
    let dir = tempfile::tempdir()?;
    let store = store_with(dir.path(), 3).await?;
    let head = || store.anchor().read().map(|h| h.map(|h| h.head.seq));
    let mut tx = store.begin_riding().await?;
    table::append_raw(&mut tx, Actor::Harness, "run.state_changed", None, &serde_json::json!({}), 2_000).await?;
    tx.commit().await?;
    store.anchor().flush();
    assert_eq!(head()?, Some(3), "not durable yet: the anchor stays behind it");
    append(&store, 1).await?;
    assert_eq!(head()?, Some(5), "the durable commit after it carried it");
    let v = verify::verify_split(&store, i64::MAX).await?;
    assert!(v.intact && v.anchor.status == "agrees", "{v:?}");
    // One that rode last is handed over when the store closes, once the log is folded in.
    let mut tx = store.begin_riding().await?;
    table::append_raw(&mut tx, Actor::Harness, "run.state_changed", None, &serde_json::json!({}), 3_000).await?;
    tx.commit().await?;
    store.close().await;
    assert_eq!(head()?, Some(6));
    Ok(())
}
