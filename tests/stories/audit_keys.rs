//! N13: each audit event carries a MAC under this machine's audit key, from the OS keyring. An
//! event appended by hand, correctly chained and dated now, no longer verifies; nor does one whose
//! MAC was copied from another event, nor a log stripped of every MAC. What a Reins process without
//! a keyring appended is named, and a person can accept it.

use std::sync::Arc;

use reins_core::api::{Digest, Verification};
use reins_core::api::{MemorySecrets, Options, Reins, Silent};

use reins_tests::{on_postgres, raw_db, PermitAll, Sandbox};

const PLAN: &str = "name = \"p\"\ngoal = \"write two files\"\n\
     [[steps]]\ntool = \"fs.write\"\nargs = { path = \"a.txt\", content = \"a\\n\" }\n\
     [[steps]]\ntool = \"fs.write\"\nargs = { path = \"b.txt\", content = \"b\\n\" }\n";

/// A facade on the sandbox's data dir whose keyring is `keys`.
async fn facade(sb: &Sandbox, keys: Arc<MemorySecrets>) -> anyhow::Result<Reins> {
    Ok(Reins::open(
        sb.data(),
        Options {
            policy: Some(Arc::new(PermitAll)),
            secrets: Some(keys),
            database: sb.database.clone(),
            ..Options::default()
        },
    )
    .await?)
}

/// Runs the two-step plan to its end.
async fn run(sb: &Sandbox, reins: &Reins) -> anyhow::Result<()> {
    let id = sb.start(reins, PLAN).await?;
    let outcome = reins.drive(id, &Silent).await?;
    anyhow::ensure!(
        format!("{outcome:?}").contains("Succeeded"),
        "the run ends: {outcome:?}"
    );
    Ok(())
}

fn damage(v: &Verification) -> Option<(String, Option<i64>)> {
    v.damage
        .as_ref()
        .map(|d| (d.kind.as_str().to_owned(), d.seq))
}

/// The fields the chain hashes, in its order (step and approval left out: the forger leaves them
/// unset).
#[derive(serde::Serialize)]
struct Canon<'a> {
    seq: i64,
    at: i64,
    actor: &'a str,
    kind: &'a str,
    run: Option<&'a str>,
    payload: &'a str,
}

/// Appends, below the door, a copy of the last `approval.approved` event as a person's, chained
/// correctly after the head and dated now, as the red team's forger did. Returns its seq.
async fn forge(reins: &Reins) -> anyhow::Result<i64> {
    let db = raw_db(reins).await?;
    let (seq, prev): (i64, String) =
        sqlx::query_as("SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1")
            .fetch_one(&db)
            .await?;
    let payload: String = sqlx::query_scalar(
        "SELECT payload FROM audit_events WHERE kind = 'run.created' ORDER BY seq LIMIT 1",
    )
    .fetch_one(&db)
    .await?;
    let at = reins_core::api::now_ms();
    let canon = serde_json::to_string(&Canon {
        seq: seq + 1,
        at,
        actor: "user",
        kind: "run.created",
        run: None,
        payload: &payload,
    })?;
    let hash = Digest::of(format!("{prev}{canon}").as_bytes()).to_string();
    sqlx::query(
        "INSERT INTO audit_events (seq, at, actor, kind, run_id, payload, prev_hash, hash) \
         VALUES ($1, $2, 'user', 'run.created', NULL, $3, $4, $5)",
    )
    .bind(seq + 1)
    .bind(at)
    .bind(&payload)
    .bind(&prev)
    .bind(&hash)
    .execute(&db)
    .await?;
    Ok(seq + 1)
}

#[tokio::test]
async fn an_event_appended_by_hand_does_not_verify_however_it_is_dressed() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = facade(&sb, sb.keys.clone()).await?;
    run(&sb, &reins).await?;
    let v = reins.audit_verify().await?;
    assert!(v.intact, "{v:?}");
    assert_eq!(v.keys.status, "checked", "{:?}", v.keys);
    assert_eq!(
        v.keys.vouched, v.events,
        "every event this machine wrote carries its MAC: {:?}",
        v.keys
    );

    // A correctly chained event, dated now, with no MAC.
    let forged = forge(&reins).await?;
    let v = reins.audit_verify().await?;
    assert_eq!(
        damage(&v),
        Some(("unvouched".into(), Some(forged))),
        "{v:?}"
    );
    assert_eq!((v.keys.unvouched_from, v.keys.unvouched), (Some(forged), 1));
    let said = v.damage.map(|d| d.detail).unwrap_or_default();
    assert!(said.contains("reins audit accept-unvouched"), "{said}");

    // The same event wearing another event's MAC.
    let db = raw_db(&reins).await?;
    sqlx::query(
        "UPDATE audit_events SET mac = (SELECT mac FROM audit_events WHERE seq = 2) WHERE seq = $1",
    )
    .bind(forged)
    .execute(&db)
    .await?;
    let v = reins.audit_verify().await?;
    assert_eq!(damage(&v), Some(("forged".into(), Some(forged))), "{v:?}");
    let refused = reins.audit_accept_unvouched("someone").await;
    assert!(
        refused.is_err_and(|e| e.to_string().contains("forged")),
        "a forged MAC is never accepted"
    );

    // Every MAC stripped: the keyring remembers that this log was keyed.
    sqlx::query("UPDATE audit_events SET mac = NULL")
        .execute(&db)
        .await?;
    let v = reins.audit_verify().await?;
    assert_eq!(damage(&v), Some(("unvouched".into(), Some(1))), "{v:?}");
    Ok(())
}

#[tokio::test]
async fn what_a_process_without_a_keyring_wrote_is_named_and_can_be_accepted() -> anyhow::Result<()>
{
    let sb = Sandbox::new()?;
    let reins = facade(&sb, sb.keys.clone()).await?;
    run(&sb, &reins).await?;
    reins.close().await;

    // A worker on the same data dir whose keyring cannot be reached.
    let keyless = facade(&sb, Arc::new(MemorySecrets::unavailable())).await?;
    run(&sb, &keyless).await?;
    let v = keyless.audit_verify().await?;
    assert!(v.intact, "without a keyring nothing can be checked: {v:?}");
    assert_eq!(v.keys.status, "unchecked");
    assert!(v.keys.detail.is_some(), "{:?}", v.keys);
    let refused = keyless.audit_accept_unvouched("someone").await;
    assert!(
        refused.is_err_and(|e| e.to_string().contains("keyring")),
        "accepting needs the key that vouches for the acceptance"
    );
    keyless.close().await;

    let reins = facade(&sb, sb.keys.clone()).await?;
    let v = reins.audit_verify().await?;
    let (kind, first) = damage(&v).unwrap_or_default();
    assert_eq!(kind, "unvouched", "{v:?}");
    assert!(
        v.keys.unvouched > 0 && v.keys.unvouched_from == first,
        "{:?}",
        v.keys
    );
    let accepted = reins.audit_accept_unvouched("alice").await?;
    assert_eq!(accepted, first.map(|f| (f, v.keys.unvouched)));
    let v = reins.audit_verify().await?;
    assert!(v.intact, "accepted: {v:?}");
    run(&sb, &reins).await?;
    assert!(reins.audit_verify().await?.intact, "and keyed again after");
    Ok(())
}

#[tokio::test]
async fn another_keys_events_are_counted_in_a_team_and_unvouched_on_ones_own_file(
) -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = facade(&sb, sb.keys.clone()).await?;
    run(&sb, &reins).await?;
    reins.close().await;
    // Another machine (or OS user) with a keyring of its own.
    let other = facade(&sb, Arc::new(MemorySecrets::default())).await?;
    run(&sb, &other).await?;
    other.close().await;

    let reins = facade(&sb, sb.keys.clone()).await?;
    let v = reins.audit_verify().await?;
    assert_eq!(v.keys.others.len(), 1, "{:?}", v.keys);
    let theirs = v.keys.others[0].events;
    assert!(theirs > 0);
    if on_postgres() {
        assert!(
            v.intact,
            "a team's machines each vouch for their own: {v:?}"
        );
    } else {
        assert_eq!(
            damage(&v).map(|d| d.0),
            Some("unvouched".into()),
            "this machine's own file holds another key's events: {v:?}"
        );
        assert_eq!(v.keys.unvouched, theirs);
    }
    Ok(())
}
