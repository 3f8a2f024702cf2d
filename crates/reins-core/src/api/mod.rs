//! The transport-agnostic facade. The `reins` CLI and the desktop app's commands are one-line
//! adapters over these functions; nothing user-facing bypasses them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::agent::script::Plan;
use crate::blob::BlobStore;
use crate::checkpoint::stored::{self, CheckpointSummary};
use crate::checkpoint::Damage;
use crate::data_dir::DataDir;
use crate::digest::Digest;
use crate::engine::{
    Control, DriveOutcome, Engine, Observer, Progress, ResumeMode, RollbackReport,
};
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::policy::{Protected, RulePolicy};
use crate::run::RunState;
use crate::store::attempts::AttemptRow;
use crate::store::intents::IntentRow;
use crate::store::steps::StepRow;
use crate::store::{self, audit, checkpoints, intents, runs, Store};
use crate::workspace::Workspace;

pub use crate::engine::{Observer as RunObserver, Silent};

mod audit_log;
mod llm;
mod memory;
mod provider;
mod review;
pub use llm::{ContextView, FactUse, KeyStatus, UsageView};
pub use provider::ProviderDefaults;
pub use review::{ApprovalView, PolicyCheck};

/// Default lease: how long a worker owns a run without writing before another may take it over.
pub const DEFAULT_LEASE_MS: i64 = 30_000;

#[derive(Clone, Debug)]
pub struct Options {
    pub lease_ms: i64,
    pub retry: crate::failure::RetryBudget,
    /// The user's policy file; None: `policy.toml` in the config dir.
    pub policy_file: Option<std::path::PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            lease_ms: DEFAULT_LEASE_MS,
            retry: crate::failure::RetryBudget::default(),
            policy_file: None,
        }
    }
}

pub struct Reins {
    engine: Engine,
    data_dir: DataDir,
    policy_file: std::path::PathBuf,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RunSummary {
    pub id: RunId,
    pub name: String,
    /// `script` or `llm`.
    pub agent: String,
    pub state: RunState,
    pub workspace: String,
    pub steps: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RunView {
    pub id: RunId,
    pub name: String,
    pub goal: String,
    pub workspace: String,
    pub agent_kind: String,
    pub state: RunState,
    pub state_version: i64,
    pub fence: i64,
    pub owner: Option<String>,
    pub lease_until: Option<i64>,
    pub last_error: Option<String>,
    pub compat: crate::compat::Compat,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Recovery {
    /// The checkpoint a resume would start from.
    pub point: Option<i64>,
    pub damage: Vec<Damage>,
    /// Checkpoints up to this seq were removed by retention (0: none).
    pub pruned_through: i64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RunDetail {
    pub run: RunView,
    pub attempts: Vec<AttemptRow>,
    /// Retries the run used from its budget (transient failures, lost workers).
    pub retries: Vec<store::retries::RetryRow>,
    pub steps: Vec<StepRow>,
    pub checkpoints: Vec<CheckpointSummary>,
    pub intents: Vec<IntentRow>,
    /// Review checkpoints of this run, oldest first (superseded ones included).
    pub approvals: Vec<store::approvals::ApprovalRow>,
    pub recovery: Recovery,
    /// Files the run touched → sha256 at the recovery point (null: absent).
    pub files: BTreeMap<String, Option<Digest>>,
    pub audit_events: usize,
    /// What the latest resumed attempt was told: steps done, settled effects, outside changes.
    pub recovery_summary: Option<crate::resume::RecoverySummary>,
    /// The run's audit events, oldest first.
    pub audit: Vec<audit::AuditRow>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    pub healthy: bool,
    pub data_dir: String,
    pub database: String,
    pub schema_version: i64,
    pub supported_schema: i64,
    pub integrity: Vec<String>,
    pub blob_count: usize,
    pub blob_bytes: u64,
    pub corrupt_blobs: Vec<String>,
    pub missing_blobs: Vec<String>,
    pub leftover_temp_files: usize,
    pub runs: usize,
    pub damaged_checkpoints: Vec<String>,
    /// "ok", or the seq of the first event whose hash does not chain.
    pub audit_chain: String,
}

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkSummary {
    pub driven: usize,
    pub finished: usize,
    pub waiting: usize,
    /// Paused at a safe point, by a person or because this worker was asked to drain.
    pub paused: usize,
    /// Let go after a transient failure, to be retried after a backoff.
    pub retrying: usize,
    pub lost: usize,
}

impl Reins {
    pub async fn open(data_dir: DataDir, options: Options) -> Result<Self> {
        data_dir.ensure()?;
        let store = Store::open(&data_dir.database()).await?;
        let blobs = BlobStore::open(&data_dir.blobs())?;
        let config_dir = crate::data_dir::config_dir()?;
        let policy_file = options
            .policy_file
            .clone()
            .unwrap_or_else(|| config_dir.join("policy.toml"));
        if options.policy_file.is_some() && !policy_file.exists() {
            return Err(Error::Invalid(format!(
                "the policy file {} does not exist (without --policy, {} is used if it exists)",
                policy_file.display(),
                config_dir.join("policy.toml").display()
            )));
        }
        let protected = Protected::new(data_dir.root(), &config_dir, &policy_file);
        let policy = RulePolicy::load(&policy_file, protected)?;
        let engine = Engine::new(store, blobs, Arc::new(policy), options.lease_ms.max(1000))
            .with_retry_budget(options.retry);
        Ok(Self {
            engine,
            data_dir,
            policy_file,
        })
    }

    pub fn data_dir(&self) -> &DataDir {
        &self.data_dir
    }

    /// The user's policy file (it may not exist: then only the built-in defaults apply).
    pub fn policy_file(&self) -> &Path {
        &self.policy_file
    }

    pub fn store(&self) -> &Store {
        self.engine.store()
    }

    pub async fn close(&self) {
        self.engine.store().close().await;
    }

    /// Creates a queued run from a plan file on a workspace folder.
    pub async fn create_script_run(
        &self,
        plan_file: &Path,
        workspace: &Path,
        observer: &dyn Observer,
    ) -> Result<RunId> {
        let text = std::fs::read_to_string(plan_file).map_err(|e| {
            Error::Invalid(format!("cannot read plan {}: {e}", plan_file.display()))
        })?;
        let plan = Plan::from_toml(&text, &plan_file.display().to_string())?;
        let ws = Workspace::open(workspace).map_err(|e| Error::Invalid(e.to_string()))?;
        let id = self.engine.create_script_run(&plan, &ws).await?;
        observer.on(&Progress::Created {
            run: id,
            name: plan.name,
            workspace: ws.root().display().to_string(),
        });
        Ok(id)
    }

    pub async fn drive(&self, id: RunId, observer: &dyn Observer) -> Result<DriveOutcome> {
        self.engine.drive(id, observer).await
    }

    /// Drives runnable runs until none is left (`once`) or forever, polling every `poll`.
    pub async fn work(
        &self,
        once: bool,
        poll: Duration,
        observer: &dyn Observer,
    ) -> Result<WorkSummary> {
        let mut summary = WorkSummary::default();
        // Pending approvals whose files change on disk are superseded at once; overdue ones expire.
        let mut watch = match crate::approval::watch::Watch::new() {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("cannot watch files of pending approvals ({e}); they are re-checked when decided");
                None
            }
        };
        loop {
            if self.engine.draining() {
                return Ok(summary);
            }
            match watch.as_mut() {
                Some(w) => {
                    self.watch_approvals(w).await?;
                }
                None => {
                    self.engine.expire_due().await?;
                }
            }
            let ids = self.engine.runnable().await?;
            if ids.is_empty() {
                if once {
                    // A run waiting out a retry backoff is still this worker's work.
                    match runs::next_retry_at(self.store().pool()).await? {
                        Some(at) => {
                            let wait = (at - crate::clock::now_ms()).clamp(10, 60_000);
                            self.sleep_unless_draining(Duration::from_millis(wait.unsigned_abs()))
                                .await;
                            continue;
                        }
                        None => return Ok(summary),
                    }
                }
                self.sleep_unless_draining(poll).await;
                continue;
            }
            for id in ids {
                if self.engine.draining() {
                    return Ok(summary);
                }
                let outcome = self.engine.drive(id, observer).await?;
                match outcome {
                    // Claimed by someone else between our look and our claim, or no longer runnable.
                    DriveOutcome::Skipped { .. } => continue,
                    DriveOutcome::Finished { .. } => summary.finished += 1,
                    DriveOutcome::NeedsHuman {
                        state: RunState::Paused,
                        ..
                    } => summary.paused += 1,
                    DriveOutcome::NeedsHuman { .. } => summary.waiting += 1,
                    DriveOutcome::Retrying { .. } => summary.retrying += 1,
                    DriveOutcome::Lost { .. } => summary.lost += 1,
                }
                summary.driven += 1;
            }
        }
    }

    /// Sleeps for `total`, waking early when a drain is requested.
    async fn sleep_unless_draining(&self, total: Duration) {
        let step = Duration::from_millis(50);
        let mut slept = Duration::ZERO;
        while slept < total && !self.engine.draining() {
            tokio::time::sleep(step.min(total - slept)).await;
            slept += step;
        }
    }

    /// The flag that drains this process's worker: runs it drives pause at their next safe point
    /// (checkpoint written and verified first), and nothing new is claimed. For signal handlers.
    pub fn drain_flag(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.engine.drain_flag()
    }

    pub fn draining(&self) -> bool {
        self.engine.draining()
    }

    /// Pauses a run: at once when no worker drives it, else at its next safe point.
    pub async fn pause(&self, id: RunId) -> Result<Control> {
        self.engine.pause(id).await
    }

    pub async fn resume(&self, id: RunId, mode: ResumeMode) -> Result<Control> {
        self.engine.resume(id, mode).await
    }

    /// A person's decision on an effect whose outcome is unknown.
    pub async fn resolve(
        &self,
        intent: &str,
        resolution: crate::engine::Resolution,
        note: Option<&str>,
    ) -> Result<crate::engine::Resolved> {
        self.engine.resolve(intent, resolution, note).await
    }

    pub async fn cancel(&self, id: RunId, reason: Option<&str>) -> Result<Control> {
        self.engine.cancel(id, reason).await
    }

    /// Changes whenever anything a screen shows changes, in this process or another one on the
    /// same data dir (see `store::audit::change_stamp`).
    pub async fn change_stamp(&self) -> Result<(i64, i64)> {
        Ok(audit::change_stamp(self.store().pool()).await?)
    }

    pub async fn run_state(&self, id: RunId) -> Result<RunState> {
        Ok(runs::get(self.store().pool(), id).await?.state)
    }

    /// Polls the run until `done(state)` holds; returns that state.
    pub async fn wait_until(
        &self,
        id: RunId,
        poll: Duration,
        done: fn(RunState) -> bool,
    ) -> Result<RunState> {
        loop {
            let state = runs::get(self.store().pool(), id).await?.state;
            if done(state) {
                return Ok(state);
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// A full run id, or a unique prefix of one.
    pub async fn resolve_run(&self, text: &str) -> Result<RunId> {
        if let Ok(id) = text.parse::<RunId>() {
            return Ok(id);
        }
        if text.len() < 4 || !text.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(Error::Invalid(format!(
                "{text:?} is not a run id (give the full id or at least its first 4 characters)"
            )));
        }
        let ids = runs::ids_with_prefix(self.store().pool(), &text.to_ascii_lowercase()).await?;
        match ids.as_slice() {
            [one] => Ok(*one),
            [] => Err(store::StoreError::NotFound {
                what: format!("run {text}"),
            }
            .into()),
            many => Err(Error::Invalid(format!(
                "{text:?} matches {} runs; give more characters",
                many.len()
            ))),
        }
    }

    pub async fn runs(&self) -> Result<Vec<RunSummary>> {
        Ok(runs::list(self.store().pool())
            .await?
            .into_iter()
            .map(|(r, steps)| RunSummary {
                id: r.id,
                name: r.name,
                agent: r.agent_kind,
                state: r.state,
                workspace: r.workspace,
                steps,
                created_at: r.created_at,
                updated_at: r.updated_at,
                last_error: r.last_error,
            })
            .collect())
    }

    pub async fn run_detail(&self, id: RunId) -> Result<RunDetail> {
        let pool = self.store().pool();
        let r = runs::get(pool, id).await?;
        let events = audit::for_run(pool, id).await?;
        let attempts = store::attempts::list(pool, id).await?;
        let inspected = stored::inspect(self.store(), self.engine.blobs(), id).await?;
        let analysis = stored::analyse(self.store(), id, &inspected).await?;
        let files = analysis
            .point
            .and_then(|p| inspected.iter().find(|i| i.seq == p))
            .and_then(|i| i.payload.as_ref().ok())
            .map(|cp| cp.files.clone())
            .unwrap_or_default();
        Ok(RunDetail {
            run: RunView {
                id: r.id,
                name: r.name,
                goal: r.goal,
                workspace: r.workspace,
                agent_kind: r.agent_kind,
                state: r.state,
                state_version: r.state_version,
                fence: r.fence,
                owner: r.owner,
                lease_until: r.lease_until,
                last_error: r.last_error,
                compat: r.compat,
                created_at: r.created_at,
                updated_at: r.updated_at,
            },
            recovery_summary: attempts.iter().rev().find_map(|a| a.recovery.clone()),
            attempts,
            retries: store::retries::list(pool, id).await?,
            steps: store::steps::list(pool, id).await?,
            checkpoints: inspected.iter().map(|i| i.summary()).collect(),
            intents: intents::list(pool, id).await?,
            approvals: store::approvals::list(pool, None, Some(id)).await?,
            recovery: Recovery {
                point: analysis.point,
                damage: analysis.damage,
                pruned_through: checkpoints::pruned_through(pool, id).await?,
            },
            files,
            audit_events: events.len(),
            audit: events,
        })
    }

    pub async fn rollback(&self, id: RunId, to: i64, dry_run: bool) -> Result<RollbackReport> {
        self.engine.rollback(id, to, dry_run).await
    }

    /// Removes all but the last `keep` checkpoints of finished runs and the blobs nothing needs.
    pub async fn gc(&self, keep: usize, dry_run: bool) -> Result<crate::engine::GcReport> {
        self.engine.gc(keep, dry_run).await
    }

    /// Checks the database, the blob store, every run's checkpoints and the audit chain.
    pub async fn doctor(&self) -> Result<DoctorReport> {
        let pool = self.store().pool();
        let blobs = self.engine.blobs();
        let integrity = self.store().integrity_check().await?;
        let mut corrupt = Vec::new();
        let mut bytes = 0;
        let listed = blobs.list()?;
        for (digest, path) in &listed {
            match std::fs::read(path) {
                Ok(b) => {
                    bytes += b.len() as u64;
                    if &Digest::of(&b) != digest {
                        corrupt.push(digest.to_string());
                    }
                }
                Err(e) => corrupt.push(format!("{digest}: {e}")),
            }
        }
        let mut referenced: Vec<Digest> = Vec::new();
        // Pre-images are what rollback and recovery depend on; post-images are derived from the journal.
        referenced.extend(
            intents::all_pre_images(pool)
                .await?
                .into_iter()
                .filter_map(|i| i.sha256),
        );
        referenced.extend(
            checkpoints::blob_refs(pool)
                .await?
                .iter()
                .filter_map(|h| Digest::parse(h)),
        );
        referenced.sort();
        referenced.dedup();
        let mut missing = Vec::new();
        for digest in &referenced {
            if self.engine.blob(digest).await?.is_none() {
                missing.push(digest.to_string());
            }
        }
        let (db_blobs, db_bytes, db_bad) = store::blobs::check(pool).await?;
        corrupt.extend(db_bad);
        let all_runs = runs::list(pool).await?;
        let mut damaged = Vec::new();
        for (r, _) in &all_runs {
            for i in stored::inspect(self.store(), blobs, r.id).await? {
                if let Err(e) = &i.payload {
                    damaged.push(format!("run {} checkpoint {}: {e}", r.id, i.seq));
                }
            }
        }
        let audit_chain = match crate::audit::verify::verify(self.store()).await?.damage {
            None => "ok".to_owned(),
            Some(d) => format!(
                "{}: {} (`reins audit verify` for details)",
                d.kind.as_str(),
                d.detail
            ),
        };
        let schema_version = self.store().schema_version().await?;
        let supported_schema = Store::supported_schema();
        let healthy = integrity == ["ok"]
            && corrupt.is_empty()
            && missing.is_empty()
            && damaged.is_empty()
            && audit_chain == "ok"
            && schema_version == supported_schema;
        Ok(DoctorReport {
            healthy,
            data_dir: self.data_dir.root().display().to_string(),
            database: self.store().path().display().to_string(),
            schema_version,
            supported_schema,
            integrity,
            blob_count: listed.len() + db_blobs,
            blob_bytes: bytes + db_bytes,
            corrupt_blobs: corrupt,
            missing_blobs: missing,
            leftover_temp_files: blobs.leftover_temps(),
            runs: all_runs.len(),
            damaged_checkpoints: damaged,
            audit_chain,
        })
    }
}
