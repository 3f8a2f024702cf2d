//! What a shared database adds to the store: wake-ups that cross machines, and blobs kept in the
//! database itself (no shared filesystem is assumed).

use super::tests::{fresh, insert_run, run_row, Backend};
use super::*;
use crate::ids::RunId;

/// Waits (at most 20 s) until `store`'s listener is `want`.
async fn until_listening(store: &Store, want: wake::Listening) -> anyhow::Result<()> {
    for _ in 0..400 {
        if store.listening() == want {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    anyhow::bail!("the listener is {:?}, not {want:?}", store.listening())
}

#[tokio::test]
async fn a_commit_on_one_machine_wakes_a_waiter_on_another_even_after_the_server_restarts(
) -> anyhow::Result<()> {
    use std::time::Duration;
    let cluster = reins_testpg::Cluster::private()?;
    let url = cluster.database("wake")?;
    let dir = tempfile::tempdir()?;
    let a = Store::open_postgres(&url, &dir.path().join("a.audit-head"), 2, true).await?;
    let b = Store::open_postgres(&url, &dir.path().join("b.audit-head"), 2, true).await?;
    until_listening(&b, wake::Listening::Up).await?;
    let mut waiter = b.waiter();
    assert!(!waiter.wait(Duration::from_millis(200)).await, "nothing committed yet");

    insert_run(&a).await?;
    assert!(waiter.wait(Duration::from_secs(10)).await, "A's commit reaches B");

    // Rolled back: nobody is told.
    let mut tx = a.begin().await?;
    runs::insert(&mut tx, &run_row(RunId::new()), "{}").await?;
    drop(tx);
    assert!(!waiter.wait(Duration::from_millis(300)).await, "a rollback wakes nobody");

    // The server goes away: B listens again once it is back, and hears A's next commit.
    cluster.restart_immediate()?;
    until_listening(&b, wake::Listening::Up).await?;
    waiter.wait(Duration::from_millis(10)).await; // the wake-up for "listening again"
    let mut committed = false;
    for _ in 0..40 {
        // A's pool finds its connections dead after the restart: retried as a worker would.
        if insert_run(&a).await.is_ok() {
            committed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(committed, "A commits again after the restart");
    assert!(waiter.wait(Duration::from_secs(10)).await, "A's commit reaches B after the restart");
    Ok(())
}

#[tokio::test]
async fn an_embedded_store_wakes_its_own_waiters() -> anyhow::Result<()> {
    let (_d, store) = fresh(Backend::Sqlite).await?;
    assert_eq!(store.listening(), wake::Listening::Local);
    let mut waiter = store.waiter();
    insert_run(&store).await?;
    assert!(waiter.wait(std::time::Duration::from_secs(5)).await);
    Ok(())
}

#[tokio::test]
async fn another_process_commit_to_an_embedded_database_wakes_a_waiter_at_once() -> anyhow::Result<()> {
    // Two stores on one file stand for two processes: each only bumps its own waiters, so what
    // wakes A's waiter for B's commit is A watching the file.
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("reins.db");
    let a = Store::open(&path).await?;
    let b = Store::open(&path).await?;
    let mut waiter = a.waiter();
    assert!(
        !waiter.wait(std::time::Duration::from_millis(300)).await,
        "nothing committed yet"
    );
    insert_run(&b).await?;
    // True only when woken (a wait that runs out is false).
    assert!(
        waiter.wait(std::time::Duration::from_secs(10)).await,
        "B's commit reaches A's waiter"
    );
    Ok(())
}

/// Team mode: a large blob lives in the shared database, not in files, and is verified when read.
    #[tokio::test]
    async fn in_team_mode_a_large_blob_is_a_row_of_the_shared_database() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let url = reins_testpg::database("blobs")?;
        let db = Store::open_postgres(&url, &dir.path().join("head"), 2, true).await?;
        let files = dir.path().join("blobs");
        let store = crate::blob::BlobStore::in_database(db.pool().clone(), &files);
        let big = vec![7u8; 3 * 1024 * 1024];
        let digest = store.put(&big).await?;
        assert_eq!(store.get(&digest).await?, big);
        assert!(!files.exists(), "nothing is written to this machine's disk");
        let (count, bytes, bad) = blobs::check(db.pool()).await?;
        assert_eq!((count, bytes, bad.len()), (1, big.len() as u64, 0));
        sqlx::query("UPDATE blobs SET bytes = $1")
            .bind(&b"not it"[..])
            .execute(db.pool())
            .await?;
        assert!(matches!(
            store.get(&digest).await,
            Err(crate::blob::BlobError::Corrupt { .. })
        ));
        assert!(matches!(
            store.get(&crate::digest::Digest::of(b"nope")).await,
            Err(crate::blob::BlobError::Missing { .. })
        ));
        Ok(())
    }

/// A CA, and a certificate it signed for 127.0.0.1 and localhost: (CA PEM, server cert PEM, key PEM).
fn certificates() -> anyhow::Result<(String, String, String)> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "reins test CA");
    let ca = rcgen::CertifiedIssuer::self_signed(ca, ca_key)?;
    let key = rcgen::KeyPair::generate()?;
    let server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?
        .signed_by(&key, &ca)?;
    Ok((ca.pem(), server.pem(), key.serialize_pem()))
}

/// TLS to the shared database: `sslmode=verify-full` with the team's CA connects (the store and
/// its listener); a server this CA did not vouch for, or no TLS at all, is refused.
#[tokio::test]
async fn a_team_database_over_tls_is_verified_against_its_ca() -> anyhow::Result<()> {
    let (ca, cert, key) = certificates()?;
    let cluster = reins_testpg::Cluster::private_tls(&cert, &key)?;
    let url = cluster.database("tls")?;
    let dir = tempfile::tempdir()?;
    let ca_file = dir.path().join("team-ca.pem");
    std::fs::write(&ca_file, ca)?;
    let (other_ca, _, _) = certificates()?;
    let other_file = dir.path().join("other-ca.pem");
    std::fs::write(&other_file, other_ca)?;
    let anchor = dir.path().join("team.audit-head");

    let verified = format!("{url}?sslmode=verify-full&sslrootcert={}", ca_file.display());
    let store = Store::open_postgres(&verified, &anchor, 2, true).await?;
    insert_run(&store).await?;
    until_listening(&store, wake::Listening::Up).await?;

    let wrong = format!("{url}?sslmode=verify-full&sslrootcert={}", other_file.display());
    let refused = Store::open_postgres(&wrong, &anchor, 2, true).await;
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("invalid peer certificate"),
        "a certificate from another CA must be refused: {message}"
    );

    let plain = format!("{url}?sslmode=disable");
    let refused = Store::open_postgres(&plain, &anchor, 2, true).await;
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("pg_hba.conf"), "no TLS, no entry: {message}");
    Ok(())
}
