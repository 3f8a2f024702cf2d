//! Helpers shared by the story tests: a private copy of the example workspace, a fresh data dir,
//! and the facade over it. Everything goes through `reins_core::api`, the one door; what a test
//! needs to see below it (rows as stored, damage made on purpose) it reads from the database file
//! itself, as an attacker or a crash would leave it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reins_core::api::{
    Action, DataDir, Decision, Options, PageRequest, Plan, Policy, PolicyContext, Reins, Risk,
    RunId, Verdict,
};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The backend the stories run on: the SQLite file in the data dir (the default), or, with
/// `REINS_TEST_BACKEND=postgres`, a database of each sandbox's own on a throwaway PostgreSQL
/// cluster (`reins-testpg`). One suite, run once per backend.
pub fn on_postgres() -> bool {
    std::env::var("REINS_TEST_BACKEND").is_ok_and(|b| b == "postgres")
}

/// A temp dir holding `ws/` (a copy of examples/ops-workspace) and `data/` (an empty data dir).
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
    /// This sandbox's keyring (the sealing key of its data dir), shared by every facade it opens.
    pub keys: Arc<reins_core::api::MemorySecrets>,
    /// Its shared database, when the stories run on PostgreSQL.
    pub database: Option<String>,
}

impl Sandbox {
    pub fn new() -> anyhow::Result<Self> {
        let tmp = tempfile::tempdir()?;
        copy_dir(
            &repo_root().join("examples/ops-workspace"),
            &tmp.path().join("ws"),
        )?;
        let database = if on_postgres() {
            Some(reins_testpg::database("story")?)
        } else {
            None
        };
        Ok(Self {
            tmp,
            keys: Arc::default(),
            database,
        })
    }

    /// Facade options for tests about runs (see [`options`]) on this sandbox's backend.
    pub fn options(&self) -> Options {
        Options {
            database: self.database.clone(),
            ..options()
        }
    }

    pub fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    pub fn data(&self) -> DataDir {
        DataDir::at(&self.tmp.path().join("data"))
    }

    pub fn read(&self, rel: &str) -> anyhow::Result<String> {
        Ok(std::fs::read_to_string(self.ws().join(rel))?)
    }

    /// The facade over this sandbox's data dir, deciding with `policy`.
    pub async fn reins(&self, policy: Arc<dyn Policy>) -> anyhow::Result<Reins> {
        Ok(Reins::open(
            self.data(),
            Options {
                policy: Some(policy),
                secrets: Some(self.keys.clone()),
                database: self.database.clone(),
                ..Options::default()
            },
        )
        .await?)
    }

    /// The facade with the rules of `toml` as the user's policy file.
    pub async fn reins_with_rules(&self, toml: &str) -> anyhow::Result<Reins> {
        let file = self.tmp.path().join("policy.toml");
        std::fs::write(&file, toml)?;
        Ok(Reins::open(
            self.data(),
            Options {
                policy_file: Some(file),
                secrets: Some(self.keys.clone()),
                database: self.database.clone(),
                ..Options::default()
            },
        )
        .await?)
    }
}

/// Allows everything: for stories about the machinery around the policy.
pub struct PermitAll;

impl Policy for PermitAll {
    fn classify(&self, action: &Action, _cx: &PolicyContext<'_>) -> Verdict {
        Verdict {
            on_timeout: None,
            risk: Risk::Low,
            decision: Decision::Allow,
            reasons: vec![format!("{}: allowed (test policy)", action.tool())],
            segments: Vec::new(),
        }
    }

    fn version(&self) -> String {
        "permit-all/1".into()
    }
}

/// Facade options for tests about runs (not about review): file changes inside the workspace run
/// without review (tests/fixtures/allow-file-changes.toml); high risk is still reviewed.
pub fn options() -> Options {
    Options {
        policy_file: Some(repo_root().join("tests/fixtures/allow-file-changes.toml")),
        ..Options::default()
    }
}

pub fn example_plan(name: &str) -> anyhow::Result<Plan> {
    let path = repo_root().join("examples/plans").join(name);
    Ok(Plan::from_toml(
        &std::fs::read_to_string(&path)?,
        &path.display().to_string(),
    )?)
}

pub fn plan(text: &str) -> anyhow::Result<Plan> {
    Ok(Plan::from_toml(text, "inline plan")?)
}

/// The database opened directly, below the door: for reading rows exactly as stored, and for
/// leaving the damage a crash or an attacker would. The SQLite file, or the sandbox's PostgreSQL
/// database; statements number their parameters (`$1`), which both read.
pub async fn raw_db(reins: &Reins) -> anyhow::Result<sqlx::AnyPool> {
    sqlx::any::install_default_drivers();
    let database = reins.database();
    let shown = database.display().to_string();
    let url = if shown.starts_with("postgres://") {
        shown
    } else {
        format!("sqlite://{shown}")
    };
    Ok(sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .after_connect(|conn, _| {
            Box::pin(async move {
                if conn.backend_name() == "SQLite" {
                    sqlx::Executor::execute(&mut *conn, "PRAGMA busy_timeout = 10000").await?;
                }
                Ok(())
            })
        })
        .connect(&url)
        .await?)
}

/// Every audit event (of one run, or all), oldest first.
pub async fn events(
    reins: &Reins,
    run: Option<RunId>,
) -> anyhow::Result<Vec<reins_core::api::AuditEventView>> {
    let mut req = PageRequest {
        oldest_first: true,
        limit: Some(10_000),
        ..PageRequest::default()
    };
    req.filter.run = run;
    Ok(reins.audit_page(&req).await?.events)
}

/// The kinds of a run's audit events, oldest first.
/// Each event must read back as its kind: its sentence is never the one for an unreadable payload.
pub async fn kinds(reins: &Reins, run: RunId) -> anyhow::Result<Vec<String>> {
    let events = events(reins, Some(run)).await?;
    for e in &events {
        anyhow::ensure!(
            !e.sentence.contains("cannot read as a sentence"),
            "event {} ({}) does not read back as its kind: {}",
            e.seq,
            e.kind,
            e.payload
        );
    }
    Ok(events.into_iter().map(|e| e.kind).collect())
}

pub mod llm_setup;
pub mod mock_anthropic;
pub mod mock_llm;
pub mod os;
pub mod otlp_sink;
pub mod review;

/// Step `seq` of a run, as the facade shows it.
pub async fn step(
    reins: &Reins,
    run: RunId,
    seq: i64,
) -> anyhow::Result<Option<reins_core::api::StepView>> {
    Ok(reins
        .run_detail(run)
        .await?
        .steps
        .into_iter()
        .find(|s| s.seq == seq))
}

/// The intent of step `seq` of a run, if its effect got that far.
pub async fn intent(
    reins: &Reins,
    run: RunId,
    seq: i64,
) -> anyhow::Result<Option<reins_core::api::IntentView>> {
    Ok(reins
        .run_detail(run)
        .await?
        .intents
        .into_iter()
        .find(|i| i.step_seq == seq))
}

/// Where the blob store keeps the blob `digest` beside an embedded database (a file named by its
/// hash). In team mode blobs are rows of the shared database instead.
pub fn blob_path(data: &DataDir, digest: &reins_core::api::Digest) -> PathBuf {
    data.blobs()
        .join(&digest.as_str()[..2])
        .join(&digest.as_str()[2..])
}

/// Leaves a blob no record refers to, stored `age` ago, as a crash between writing a blob and
/// committing what refers to it would: a file beside an embedded database, a row of the shared one.
pub async fn orphan_blob(
    reins: &Reins,
    data: &DataDir,
    bytes: &[u8],
    age: std::time::Duration,
) -> anyhow::Result<reins_core::api::Digest> {
    let digest = reins_core::api::Digest::of(bytes);
    let stored = std::time::SystemTime::now() - age;
    if on_postgres() {
        let stored_ms = stored.duration_since(std::time::UNIX_EPOCH)?.as_millis();
        let db = raw_db(reins).await?;
        sqlx::query("INSERT INTO blobs (sha256, size, bytes, stored_ms) VALUES ($1, $2, $3, $4)")
            .bind(digest.as_str())
            .bind(i64::try_from(bytes.len())?)
            .bind(bytes)
            .bind(i64::try_from(stored_ms)?)
            .execute(&db)
            .await?;
        return Ok(digest);
    }
    let path = blob_path(data, &digest);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, bytes)?;
    std::fs::File::options()
        .write(true)
        .open(&path)?
        .set_modified(stored)?;
    Ok(digest)
}

/// Whether the blob store holds `digest`, wherever this backend keeps blobs.
pub async fn blob_stored(
    reins: &Reins,
    data: &DataDir,
    digest: &reins_core::api::Digest,
) -> anyhow::Result<bool> {
    if on_postgres() {
        let db = raw_db(reins).await?;
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM blobs WHERE sha256 = $1")
            .bind(digest.as_str())
            .fetch_one(&db)
            .await?;
        return Ok(n == 1);
    }
    Ok(blob_path(data, digest).is_file())
}

/// Every file under `dir`, however deep.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}
