//! Opening the shared PostgreSQL database of team mode: its session settings, its migrations (the
//! same schema under the same versions as the SQLite file), and the newer-schema refusal.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::AnyPoolOptions;

use super::{anchor, wake, Dialect, Result, Store, StoreError};

/// Per-connection settings on a shared PostgreSQL.
/// - Every commit waits for its WAL flush: an acknowledged step is on disk.
/// - A write transaction holds the team's write lock, and Reins' transactions last milliseconds. A
///   process frozen inside one (SIGSTOP, a paused VM) would hold everyone's writes, so the server
///   ends a session idle in a transaction for 5 s: its transaction rolls back whole, the lock is
///   free, and the frozen process finds its connection gone when it wakes.
/// - Waiting for that lock gives up after 30 s with an error (taken as transient) instead of
///   hanging.
const POSTGRES_SETTINGS: &str = "SET synchronous_commit = on; \
     SET idle_in_transaction_session_timeout = '5s'; \
     SET lock_timeout = '30s'; \
     SET application_name = 'reins'";

/// The same schema on PostgreSQL, under the same versions.
static PG_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// `url` without its password, for messages and logs.
pub fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                let _ = parsed.set_password(Some("***"));
            }
            parsed.to_string()
        }
        Err(_) => "(a database URL that does not parse)".into(),
    }
}

/// `url` with `password` for its user: a password from the keyring, kept in memory only. A URL
/// that already names one is refused, so it is clear which one is used.
pub fn with_password(url: &str, password: &str) -> Result<String> {
    let mut parsed = url::Url::parse(url)
        .map_err(|e| StoreError::Invalid(format!("{}: {e}", redacted(url))))?;
    if parsed.password().is_some() {
        return Err(StoreError::Invalid(format!(
            "{} already names a password; take it out of the URL, or do not name a keyring entry",
            redacted(url)
        )));
    }
    if parsed.username().is_empty() || parsed.set_password(Some(password)).is_err() {
        return Err(StoreError::Invalid(format!(
            "{}: name the user the password belongs to (postgres://USER@HOST/DB)",
            redacted(url)
        )));
    }
    Ok(parsed.to_string())
}

/// The newest migration applied to the database behind `pool`; None when Reins never set it up.
async fn applied_schema(pool: &super::Pool) -> std::result::Result<Option<i64>, sqlx::Error> {
    let has_migrations: bool =
        sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
            .fetch_one(pool)
            .await?;
    if !has_migrations {
        return Ok(None);
    }
    sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
        .fetch_one(pool)
        .await
}

impl Store {
    /// Connects to the database at `url` and reads its schema version, creating and changing
    /// nothing: None for a database Reins has not set up yet. For checking a team database
    /// before switching to it.
    pub async fn probe_postgres(url: &str) -> Result<Option<i64>> {
        sqlx::any::install_default_drivers();
        let shown = PathBuf::from(redacted(url));
        let open_error = |source| StoreError::Open {
            path: shown.clone(),
            source,
        };
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await
            .map_err(open_error)?;
        let version = applied_schema(&pool).await.map_err(open_error)?;
        pool.close().await;
        Ok(version)
    }

    /// Opens the shared PostgreSQL database at `url` (team mode) and brings its schema up to date.
    /// `anchor` is this machine's record of the highest audit chain head it has seen, kept in its
    /// own data dir: a database whose chain is shorter than, or does not contain, that head fails
    /// verification.
    ///
    /// A database whose schema is newer than this build is refused before anything is written.
    /// With `listen`, one more connection listens for other machines' commits (see `wake`).
    pub async fn open_postgres(
        url: &str,
        anchor: &Path,
        connections: u32,
        listen: bool,
    ) -> Result<Self> {
        sqlx::any::install_default_drivers();
        let shown = PathBuf::from(redacted(url));
        let open_error = |source| StoreError::Open {
            path: shown.clone(),
            source,
        };
        let listen_options =
            sqlx::postgres::PgConnectOptions::from_str(url).map_err(open_error)?;
        let pool = AnyPoolOptions::new()
            .max_connections(connections.clamp(1, 64))
            .acquire_timeout(Duration::from_secs(15))
            .after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::Executor::execute(&mut *conn, POSTGRES_SETTINGS).await?;
                    Ok(())
                })
            })
            .connect(url)
            .await
            .map_err(open_error)?;
        let found = applied_schema(&pool).await.map_err(open_error)?;
        let supported = Self::supported_schema();
        if let Some(found) = found.filter(|found| *found > supported) {
            pool.close().await;
            return Err(StoreError::NewerSchema {
                path: shown,
                found,
                supported,
            });
        }
        // sqlx holds an advisory lock while migrating, so machines starting at once take turns.
        PG_MIGRATOR
            .run(&pool)
            .await
            .map_err(|source| StoreError::Migrate {
                path: shown.clone(),
                source,
            })?;
        let store = Self {
            pool,
            dialect: Dialect::Postgres,
            vouch: Arc::new(super::vouch::Vouch::new(&shown.display().to_string())),
            path: shown,
            anchor: Arc::new(anchor::Anchor::at(anchor)),
            wake: if listen {
                wake::Wake::listening(listen_options)
            } else {
                wake::Wake::local(None)
            },
            riding: None,
        };
        store.ensure_anchor().await?;
        Ok(store)
    }
}
