//! Storage: opening the SQLite file or a shared PostgreSQL (with the checks that keep a damaged or
//! newer database untouched) and one repository module per table group. Single statements take
//! `&Pool`; composed writes take a transaction begun with the dialect's write lock (`BEGIN
//! IMMEDIATE`, or an advisory lock) so concurrent processes and machines queue instead of failing.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::sqlite::SqliteConnectOptions;
use std::sync::Arc;

pub mod anchor;
pub mod approvals;
pub mod attempts;
pub mod audit;
pub mod audit_read;
pub mod blobs;
pub mod budgets;
pub mod change;
pub mod checkpoints;
mod class;
pub mod column;
mod decode;
pub mod devices;
pub mod dialect;
pub mod fused;
pub mod grants;
pub mod history;
pub mod intents;
pub mod manifests;
pub mod memory;
pub mod memory_write;
pub mod processes;
pub mod requests;
pub mod retries;
pub mod runs;
pub mod scan;
#[cfg(test)]
mod schema;
pub mod sealed;
pub mod steps;
pub mod telemetry;
pub mod token_counts;
pub mod transition;
mod postgres;
mod riding;
mod tx;
pub mod vouch;
pub mod wake;
pub mod write;

#[cfg(test)]
mod damage_tests;
#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod fused_tests;
#[cfg(test)]
mod tests;

pub use dialect::Dialect;
pub use postgres::{redacted, with_password};
pub use tx::Tx;

/// The database the store talks to. sqlx's `Any` driver, so one set of queries (parameters
/// written `$1`, `$2`, …, which SQLite reads as numbered too) serves the embedded SQLite file and a
/// shared PostgreSQL; what differs between the two is kept in this module.
pub type Db = sqlx::Any;
pub type Pool = sqlx::Pool<Db>;
pub type Conn = sqlx::AnyConnection;
pub type DbRow = sqlx::any::AnyRow;
pub type Args<'q> = sqlx::any::AnyArguments<'q>;

/// Anything a single statement can run on: the pool, or a transaction's connection.
pub trait Executor<'e>: sqlx::Executor<'e, Database = Db> {}
impl<'e, T: sqlx::Executor<'e, Database = Db>> Executor<'e> for T {}

/// Per-connection settings of the SQLite store, run on every new connection. The busy timeout
/// comes first so that switching to WAL waits for another process instead of failing.
const SQLITE_SETTINGS: &str = "PRAGMA busy_timeout = 10000; \
     PRAGMA foreign_keys = ON; \
     PRAGMA secure_delete = ON; \
     PRAGMA journal_mode = WAL; \
     PRAGMA synchronous = FULL;";



static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: not an SQLite database, so not a Reins database; nothing was changed. Move it aside or pass another --data-dir")]
    NotADatabase { path: PathBuf },
    #[error("{path}: the database is damaged ({detail}); nothing was changed. Restore a backup or move the file aside")]
    Corrupt { path: PathBuf, detail: String },
    #[error("{path}: written by a newer Reins (schema version {found}, this one knows up to {supported}); nothing was changed. Upgrade Reins to open it")]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("{path}: cannot open the database: {source}")]
    Open { path: PathBuf, source: sqlx::Error },
    #[error("{path}: migrating the database failed: {source}")]
    Migrate {
        path: PathBuf,
        source: sqlx::migrate::MigrateError,
    },
    #[error("{what} not found")]
    NotFound { what: String },
    #[error("lost run {run}: another worker owns it now (our fence {fence} is stale), or it is no longer running")]
    LostLease { run: String, fence: i64 },
    #[error("run {run} changed under us (expected state version {expected}); not retrying on stale data")]
    StaleState { run: String, expected: i64 },
    #[error("run {run} is {from}; it cannot {}", event.verb())]
    Illegal {
        run: String,
        from: crate::run::RunState,
        event: crate::run::RunEvent,
    },
    #[error("stored data is invalid: {0}")]
    Invalid(String),
    /// A row of the harness's own data does not decode: damage, never read as a default.
    #[error("the database is damaged: {table} row ({row}) does not read back: {detail}. `reins doctor` checks the whole store")]
    Damaged {
        table: &'static str,
        row: String,
        detail: String,
    },
    /// A guarded write found the row changed (an approval already decided, a grant revoked).
    #[error("{0}")]
    Conflict(String),
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[derive(Clone, Debug)]
pub struct Store {
    pool: Pool,
    dialect: Dialect,
    path: PathBuf,
    anchor: Arc<anchor::Anchor>,
    wake: Arc<wake::Wake>,
    /// The key each appended event's MAC is made with (N13).
    vouch: Arc<vouch::Vouch>,
    /// SQLite: the connection for commits that ride with the next durable one (`begin_riding`),
    /// opened when first used.
    riding: Option<Pool>,
}

/// The database and its journal files are readable by their owner only (F11: it was 0644).
/// Best effort: a file system without modes keeps whatever it has.
fn owner_only(db: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    for suffix in ["", "-wal", "-shm"] {
        let mut file = db.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600));
    }
}

/// Connections a store keeps by default: a worker's drive, its heartbeat and the app's reads at once.
pub const DEFAULT_CONNECTIONS: u32 = 4;

impl Store {
    /// Opens (creating if missing) the database at `path` and brings its schema up to date.
    ///
    /// An existing file is first checked read-only: not SQLite, a schema that cannot be read, or a
    /// newer schema → an error naming the file, and not one byte of it is written.
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    pub async fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, DEFAULT_CONNECTIONS).await
    }

    /// Opens the database with at most `connections` connections (1 to 16).
    pub async fn open_with(path: &Path, connections: u32) -> Result<Self> {
        // Processes opening the same data dir at once (the app and a CLI, two workers) take turns
        // for the checks and the migration: a database half-way through being created must not be
        // read as damaged, nor two migrations race. Released when `_opening` drops.
        let _opening = open_lock(path)?;
        if path.exists() {
            check_existing(path).await?;
        }
        sqlx::any::install_default_drivers();
        let url = sqlite_url(path)?;
        let pool = AnyPoolOptions::new()
            .max_connections(connections.clamp(1, 16))
            // A local file needs no liveness ping before each use: that ping is a round trip per transaction.
            .test_before_acquire(false)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    // Deleted content is overwritten, not left in free pages: a deleted memory
                    // fact is gone from the file's bytes (secure_delete).
                    sqlx::Executor::execute(&mut *conn, SQLITE_SETTINGS).await?;
                    Ok(())
                })
            })
            .connect(&url)
            .await
            .map_err(|source| classify_open_error(path, source))?;
        let riding = riding::pool(&url).map_err(|source| classify_open_error(path, source))?;
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|source| StoreError::Migrate {
                path: path.to_owned(),
                source,
            })?;
        owner_only(path);
        let store = Self {
            pool,
            dialect: Dialect::Sqlite,
            path: path.to_owned(),
            anchor: Arc::new(anchor::Anchor::for_database(path)),
            wake: wake::Wake::local(Some(path.to_owned())),
            vouch: Arc::new(vouch::Vouch::new(
                &std::fs::canonicalize(path)
                    .unwrap_or_else(|_| path.to_owned())
                    .display()
                    .to_string(),
            )),
            riding: Some(riding),
        };
        store.ensure_anchor().await?;
        Ok(store)
    }

    /// A database with events but no head anchor (made before anchors existed, or the file was
    /// removed) gets one for its current head, and the chain records that it happened: from then
    /// on truncation is caught, and `reins audit list --kind audit.anchor_created` shows since when.
    async fn ensure_anchor(&self) -> Result<()> {
        if self.anchor.path().exists() {
            return Ok(());
        }
        let marks = audit::marks(&self.pool).await?;
        let Some(head) = marks.last().cloned() else {
            return Ok(());
        };
        if self.dialect == Dialect::Postgres {
            // A shared database has one anchor per machine, in that machine's data dir. A machine
            // without one is joining: it starts vouching for the chain as it finds it, and from
            // then on catches a database that loses or replaces what it has seen.
            self.anchor.submit(marks);
            self.anchor.flush();
            return Ok(());
        }
        let mut tx = self.begin().await?;
        tx.appended(marks);
        audit::append(
            &mut tx,
            audit::Event::new(
                audit::Actor::System,
                None,
                crate::event::AnchorCreated {
                    reason: "no head anchor was found beside the database".into(),
                    adopted: head,
                    path: self.anchor.path().to_owned(),
                },
            ),
            crate::clock::now_ms(),
        )
        .await?;
        tx.commit().await?;
        self.anchor.flush();
        Ok(())
    }

    pub fn anchor(&self) -> &anchor::Anchor {
        &self.anchor
    }

    /// The audit key this store's appends are vouched for with.
    pub fn vouch(&self) -> &vouch::Vouch {
        &self.vouch
    }

    /// Makes each event appended from now on carry a MAC under the audit key in `keys`.
    pub fn use_keys(&self, keys: Arc<dyn crate::keys::SecretStore>) {
        self.vouch.use_keys(keys);
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }


    /// Whether other machines share this store (a team's PostgreSQL), rather than this machine
    /// alone having it (its SQLite file): their workers, reviewers and events are in it too.
    pub fn shared(&self) -> bool {
        self.dialect == Dialect::Postgres
    }

    /// Wakes when a write commits: this process's, and on a shared database any machine's.
    pub fn waiter(&self) -> wake::Waiter {
        self.wake.subscribe()
    }

    /// The feed of what screens show changing (see [`wake::Changes`]), looked at least every `poll`.
    pub fn changes(&self, poll: std::time::Duration) -> wake::Changes {
        wake::Changes::new(self.waiter(), self.pool.clone(), poll)
    }

    pub fn listening(&self) -> wake::Listening {
        self.wake.listening_state()
    }

    /// Where the audit scans (verification, export) read from.
    pub fn scan_source(&self) -> Result<scan::Source> {
        Ok(match self.dialect {
            Dialect::Sqlite => scan::Source::File(self.path.clone()),
            Dialect::Postgres => scan::Source::Pool(
                self.pool.clone(),
                tokio::runtime::Handle::try_current().map_err(|e| {
                    StoreError::Invalid(format!("an audit scan needs the async runtime: {e}"))
                })?,
            ),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A write transaction that takes the database's write lock up front.
    pub async fn begin(&self) -> Result<Tx> {
        self.begin_on(&self.pool, self.dialect.begin_write()).await
    }

    /// A write transaction that wakes no other process when it commits
    /// (`Dialect::begin_quiet_write`); this process's own waiters still wake.
    pub async fn begin_quiet(&self) -> Result<Tx> {
        self.begin_on(&self.pool, self.dialect.begin_quiet_write()).await
    }

    /// One statement that commits on its own, with no transaction around it (PostgreSQL only):
    /// a step's own rows when they all travel in one statement that lands whole or not at all
    /// (`fused::Whole`). It saves the round trips of `BEGIN` and `COMMIT`.
    pub async fn begin_single(&self) -> Result<Tx> {
        if self.dialect != Dialect::Postgres {
            return self.begin_quiet().await;
        }
        let key = self.vouch.key().await;
        let conn = self.pool.acquire().await?;
        Ok(Tx::single(
            conn,
            self.dialect,
            Arc::clone(&self.anchor),
            Arc::clone(&self.wake),
            (Arc::clone(&self.vouch), key),
        ))
    }

    /// A write transaction on `pool` (the store's, or the riding connection's).
    async fn begin_on(&self, pool: &Pool, statement: &'static str) -> Result<Tx> {
        // Loaded before the write lock is taken: the first load waits on the keyring.
        let key = self.vouch.key().await;
        let inner = pool.begin_with(statement).await?;
        Ok(Tx::new(
            inner,
            self.dialect,
            Arc::clone(&self.anchor),
            Arc::clone(&self.wake),
            (Arc::clone(&self.vouch), key),
        ))
    }

    /// The newest migration this build knows.
    pub fn supported_schema() -> i64 {
        MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
    }

    /// The newest migration applied to this database.
    pub async fn schema_version(&self) -> Result<i64> {
        let v: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(&self.pool)
                .await?;
        Ok(v.unwrap_or(0))
    }

    /// SQLite's `PRAGMA integrity_check`: "ok" or the list of problems. PostgreSQL checks its own
    /// pages as it reads them; there every table is read through once, so a relation that cannot
    /// be read is reported.
    pub async fn integrity_check(&self) -> Result<Vec<String>> {
        if self.dialect == Dialect::Sqlite {
            return Ok(sqlx::query_scalar("PRAGMA integrity_check")
                .fetch_all(&self.pool)
                .await?);
        }
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut problems = Vec::new();
        for table in tables {
            let quoted = table.replace('"', "\"\"");
            if let Err(e) = sqlx::query(&format!("SELECT COUNT(*) FROM \"{quoted}\""))
                .fetch_one(&self.pool)
                .await
            {
                problems.push(format!("{table}: {e}"));
            }
        }
        Ok(if problems.is_empty() { vec!["ok".into()] } else { problems })
    }

    /// Waits for the audit anchor to catch up with every commit, then closes the pool.
    pub async fn close(&self) {
        self.close_riding().await;
        self.anchor.flush();
        self.pool.close().await;
    }
}

/// An exclusive advisory lock on `<database>.open-lock`, held while opening.
fn open_lock(path: &Path) -> Result<std::fs::File> {
    let mut name = path.as_os_str().to_owned();
    name.push(".open-lock");
    let io = |e: std::io::Error| StoreError::Open {
        path: path.to_owned(),
        source: sqlx::Error::Io(e),
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(name))
        .map_err(io)?;
    file.lock().map_err(io)?;
    Ok(file)
}


/// `sqlite://` and the path, percent-encoded (so a data dir with spaces or `?` in its name opens),
/// created if missing.
fn sqlite_url(path: &Path) -> Result<String> {
    let absolute = std::path::absolute(path).map_err(|e| StoreError::Open {
        path: path.to_owned(),
        source: sqlx::Error::Io(e),
    })?;
    let file = url::Url::from_file_path(&absolute).map_err(|()| StoreError::Open {
        path: path.to_owned(),
        source: sqlx::Error::Configuration("the database path cannot be written as a URL".into()),
    })?;
    let encoded = file.as_str().trim_start_matches("file://");
    Ok(format!("sqlite://{encoded}?mode=rwc"))
}

fn connect_options(path: &Path) -> Result<SqliteConnectOptions> {
    let url = format!("sqlite://{}", path.display());
    Ok(SqliteConnectOptions::from_str(&url)
        .map_err(|source| StoreError::Open {
            path: path.to_owned(),
            source,
        })?
        .filename(path)
        .foreign_keys(true)
        // Deleted content is overwritten, not left in free pages: a deleted memory fact is gone
        // from the file's bytes.
        .pragma("secure_delete", "ON")
        .busy_timeout(Duration::from_secs(10)))
}

async fn check_existing(path: &Path) -> Result<()> {
    let mut header = [0u8; 16];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut header))
        .map_err(|e| StoreError::Open {
            path: path.to_owned(),
            source: sqlx::Error::Io(e),
        })?;
    if n == 0 {
        return Ok(()); // an empty file is a new database
    }
    if n < 16 || &header != SQLITE_MAGIC {
        return Err(StoreError::NotADatabase {
            path: path.to_owned(),
        });
    }
    // Immutable read-only: SQLite neither writes nor creates -wal/-shm beside the file. Safe
    // because the checks below only need the main file as it is on disk right now.
    let options = connect_options(path)?
        .read_only(true)
        .immutable(has_no_wal(path));
    // One connection, not a pool: this runs on every open, and a short-lived `reins` (a Claude
    // Code hook) pays for each statement's round trip to SQLite's thread.
    let mut conn = sqlx::ConnectOptions::connect(&options)
        .await
        .map_err(|source| classify_open_error(path, source))?;
    let outcome = inspect(&mut conn, path).await;
    let _ = sqlx::Connection::close(conn).await;
    outcome
}

fn has_no_wal(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(PathBuf::from(wal))
        .map(|m| m.len() == 0)
        .unwrap_or(true)
}

/// The checks every open makes, read-only: the schema can be read, the schema version is one this
/// build knows, and the tables can be walked into. Cheap (it does not grow with the history), so
/// every command can afford it; `reins doctor` runs SQLite's full integrity check. Damage found
/// later surfaces as an error naming the database, and a run that meets it is suspended.
async fn inspect(conn: &mut sqlx::SqliteConnection, path: &Path) -> Result<()> {
    let corrupt = |source| classify_open_error(path, source);
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&mut *conn)
            .await
            .map_err(corrupt)?;
    // In one statement: each table's root page and its first leaf (read from the table itself,
    // not an index), the runs table whole (one row per run), and the newest migration applied.
    let mut parts: Vec<String> = tables
        .iter()
        .filter(|t| !t.starts_with("sqlite_"))
        .map(|t| {
            let quoted = t.replace('"', "\"\"");
            format!("(SELECT COUNT(*) FROM (SELECT * FROM \"{quoted}\" NOT INDEXED LIMIT 1))")
        })
        .collect();
    let has = |name: &str| tables.iter().any(|t| t == name);
    parts.push(if has("runs") { "(SELECT COUNT(*) FROM runs)" } else { "0" }.into());
    parts.push(
        if has("_sqlx_migrations") { "(SELECT MAX(version) FROM _sqlx_migrations)" } else { "NULL" }
            .into(),
    );
    let row = sqlx::query(&format!("SELECT {}", parts.join(", ")))
        .fetch_one(&mut *conn)
        .await
        .map_err(corrupt)?;
    let found: Option<i64> = sqlx::Row::try_get(&row, parts.len() - 1).map_err(corrupt)?;
    let supported = Store::supported_schema();
    match found {
        Some(found) if found > supported => Err(StoreError::NewerSchema {
            path: path.to_owned(),
            found,
            supported,
        }),
        _ => Ok(()),
    }
}

fn classify_open_error(path: &Path, source: sqlx::Error) -> StoreError {
    let code = source
        .as_database_error()
        .and_then(|e| e.code())
        .map(|c| c.into_owned())
        .unwrap_or_default();
    // SQLITE_CORRUPT = 11, SQLITE_NOTADB = 26 (primary codes; extended codes keep them in the low byte).
    match code.parse::<i64>().map(|c| c & 0xff) {
        Ok(26) => StoreError::NotADatabase {
            path: path.to_owned(),
        },
        Ok(11) => StoreError::Corrupt {
            path: path.to_owned(),
            detail: source.to_string(),
        },
        _ => StoreError::Open {
            path: path.to_owned(),
            source,
        },
    }
}

pub(crate) fn map_not_found(e: sqlx::Error, what: impl FnOnce() -> String) -> StoreError {
    match e {
        sqlx::Error::RowNotFound => StoreError::NotFound { what: what() },
        other => StoreError::Sqlx(other),
    }
}
