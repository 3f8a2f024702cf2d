//! The driver. It owns a run while its lease is live, replays the recovery point, settles the effect
//! journal, and runs the agent's proposals through the step protocol. Every write it commits carries
//! its fence; a write that finds the fence moved means another worker owns the run, and this one stops.
//!
//! The files follow a drive, and the step protocol in its order:
//!
//! | when | file |
//! |---|---|
//! | a run is created | `create.rs` |
//! | a worker claims it (lease, fence, attempt) | `claim.rs` |
//! | the drive: loop, safe points, pause, finish, retry, suspend | `drive.rs` |
//! | before anything runs again: orphans, journal, recovery summary | `recover.rs`, `settle.rs` |
//! | a model call / a question to the person | `think.rs`, `question.rs` |
//! | 1–3. validate, classify, preview, and the gate (deny / review / grant / run) | `propose.rs` over the pure `decide.rs` |
//! | 4. the review checkpoint | `park.rs` |
//! | 5. a person's decision | `decision.rs` |
//! | 6. bind: the approved action, only as reviewed | `bind.rs` |
//! | 7. the durable intent | `intent.rs` |
//! | 8. the effect | `effect.rs` |
//! | 9. confirm (or fail, or outcome unknown) | `confirm.rs` |
//! | a step already in the journal | `reuse.rs` |
//! | recording a step that ran no effect | `record.rs` |
//! | every durable change, one path | `commit.rs` |
//! | a person's controls: pause, resume, cancel; resolving an unknown outcome | `control.rs`, `resolve.rs` |
//! | rollback and retention | `rollback.rs`, `retention.rs` |

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::blob::BlobStore;
use crate::checkpoint::{self, Checkpoint};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::policy::Policy;
use crate::store::{self, runs, Store};

mod account;
mod applied;
mod batch;
mod bind;
mod brief;
mod budget;
mod claim;
mod commit;
mod confirm;
mod control;
mod create;
mod decide;
mod decision;
mod edit;
mod devices;
mod doctor;
mod drive;
mod effect;
mod heartbeat;
mod held;
mod history;
mod requests;
mod intent;
mod mcp;
mod park;
mod pause;
mod propose;
mod question;
mod record;
mod recover;
mod resolve;
mod retention;
mod retry;
mod reuse;
mod rollback;
mod sealing;
mod take;
mod watch;
mod work;
mod settle;
mod staging;
pub mod stored;
mod think;
mod timeout;
mod tokens;

pub use control::{Control, ResumeMode};
pub use batch::{Shown, MAX_BATCH};
pub use budget::{suggested as budget_suggestion, BudgetView, AT_BUDGET};
pub use decision::{ApproveRequest, Decided, EditedAction};
pub use doctor::DoctorReport;
pub use requests::OutsideOutcome;
pub use work::WorkSummary;
pub use crate::progress::{DriveOutcome, Observer, Progress, Silent};
pub use resolve::Resolved;
pub(crate) use think::ModelCall;
pub use rollback::RollbackReport;

pub struct Engine {
    store: Store,
    blobs: BlobStore,
    policy: Arc<dyn Policy>,
    worker: String,
    lease_ms: i64,
    /// Set when the worker should stop taking work and pause what it drives at the next safe point.
    drain: Arc<AtomicBool>,
    budget: crate::failure::RetryBudget,
    /// Where API keys are read from (the OS keyring; a fake in tests).
    secrets: Arc<dyn crate::keys::SecretStore>,
    /// Seals the secrets rows would store, with a key from `secrets`.
    sealer: Arc<crate::seal::Sealer>,
    /// External agents kept alive while their runs wait for a person here.
    sessions: Arc<crate::agent::Sessions>,
    /// Their workspaces' watches, kept with them (`watch.rs`).
    watches: Arc<watch::Parked>,
    /// Where external agents' stderr logs go (`<run>.log`); none: kept in memory only.
    agent_logs: Option<std::path::PathBuf>,
    /// How external agents reach the profile memory over MCP; none: they do not.
    reins_program: Option<crate::agent::ReinsProgram>,
    /// Workspaces on other machines this worker can reach (team mode).
    reach: Arc<crate::worker::Reach>,
    /// What confines the processes this engine starts.
    contain: crate::contain::Setup,
    /// The agents and servers this machine registered: all a run from another machine may start.
    registry: Arc<dyn crate::agent::registry::Registry>,
    /// Whether each model request's messages are kept (redacted) in the blob store, for an
    /// OpenTelemetry export with content on to send as the call's prompt.
    keep_prompts: AtomicBool,
}

impl Engine {
    pub fn new(store: Store, blobs: BlobStore, policy: Arc<dyn Policy>, lease_ms: i64) -> Self {
        let worker = crate::worker::WorkerId::current().to_string();
        let keyring: Arc<dyn crate::keys::SecretStore> = Arc::new(crate::keys::Keyring::new());
        store.use_keys(Arc::clone(&keyring));
        Self {
            store,
            blobs,
            policy,
            worker,
            lease_ms,
            drain: Arc::new(AtomicBool::new(false)),
            budget: crate::failure::RetryBudget::default(),
            secrets: Arc::clone(&keyring),
            sealer: Arc::new(crate::seal::Sealer::new(keyring)),
            sessions: Arc::new(crate::agent::Sessions::new()),
            watches: Arc::default(),
            agent_logs: None,
            reins_program: None,
            reach: Arc::default(),
            registry: Arc::new(crate::agent::registry::Nothing),
            contain: crate::contain::Setup {
                helper: crate::contain::launch::helper(),
                ..Default::default()
            },
            keep_prompts: AtomicBool::new(false),
        }
    }

    /// Keeps each model request's messages, redacted, in the blob store from the next call on
    /// (an export with content on sends them as the prompt); off, none are kept.
    pub fn keep_prompts(&self, on: bool) {
        self.keep_prompts.store(on, Ordering::Relaxed);
    }

    pub(crate) fn keeps_prompts(&self) -> bool {
        self.keep_prompts.load(Ordering::Relaxed)
    }

    /// Keeps Reins' own places out of every confined process's reach.
    pub fn with_containment(mut self, setup: crate::contain::Setup) -> Self {
        self.contain = setup;
        self
    }

    /// Gives external agents `reins mcp serve` as an MCP server, bound to their run.
    pub fn with_reins_program(mut self, program: crate::agent::ReinsProgram) -> Self {
        self.reins_program = Some(program);
        self
    }

    /// What an agent of `row` is built with.
    pub(crate) fn services(&self, row: &runs::RunRow) -> crate::agent::Services {
        crate::agent::Services {
            run: row.id,
            root: std::path::PathBuf::from(&row.workspace),
            secrets: Arc::clone(&self.secrets),
            sessions: Arc::clone(&self.sessions),
            log: self.agent_log(row.id),
            reins: self.reins_program.clone(),
            contain: self.contain.clone(),
            store: Some(self.store.clone()),
        }
    }

    /// Logs external agents' stderr under `dir`.
    pub fn with_agent_logs(mut self, dir: std::path::PathBuf) -> Self {
        self.agent_logs = Some(dir);
        self
    }

    /// Where run `id`'s agent logs its stderr, if agents' stderr is logged.
    pub fn agent_log(&self, id: RunId) -> Option<std::path::PathBuf> {
        self.agent_logs.as_ref().map(|d| d.join(format!("{id}.log")))
    }

    /// Reads API keys from `secrets` instead of the OS keyring.
    pub fn with_secrets(mut self, secrets: Arc<dyn crate::keys::SecretStore>) -> Self {
        self.sealer = Arc::new(crate::seal::Sealer::new(Arc::clone(&secrets)));
        self.store.use_keys(Arc::clone(&secrets));
        self.secrets = secrets;
        self
    }


    pub fn secrets(&self) -> &Arc<dyn crate::keys::SecretStore> {
        &self.secrets
    }

    /// What confines the processes this engine starts.
    pub fn containment(&self) -> &crate::contain::Setup {
        &self.contain
    }

    /// Sets how many retries (transient failures and lost workers) a run may use.
    pub fn with_retry_budget(mut self, budget: crate::failure::RetryBudget) -> Self {
        self.budget = budget;
        self
    }

    /// Asks this engine to drain: every run it drives pauses at its next safe point, and no new run
    /// is claimed. Safe to call from a signal handler task.
    pub fn drain_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.drain)
    }

    pub fn draining(&self) -> bool {
        self.drain.load(Ordering::Relaxed)
    }

    /// Reads a checkpoint back and verifies its checksum and payload.
    pub async fn verify_checkpoint(&self, run: RunId, seq: i64) -> Result<Checkpoint> {
        stored::load(&self.store, &self.blobs, run, seq)
            .await?
            .map_err(|detail| {
                Error::Checkpoint(checkpoint::CheckpointError::Decode { seq, detail })
            })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// Splits blobs an intent needs by size: large ones are written to the file store now (fsynced,
    /// before the intent commits); the small ones are returned to be committed inside the intent's own
    /// transaction. Either way they are durable once the intent is.
    pub(crate) async fn stage_blobs(&self, blobs: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
        let mut small = Vec::new();
        for bytes in blobs {
            if bytes.len() <= store::blobs::INLINE_LIMIT {
                small.push(bytes.clone());
            } else {
                self.blobs.put(bytes).await?;
            }
        }
        Ok(small)
    }

    /// A blob by digest, from the database or the file store, verified. None when neither has it.
    pub async fn blob(&self, digest: &crate::digest::Digest) -> Result<Option<Vec<u8>>> {
        if let Some(bytes) = store::blobs::get(self.store.pool(), digest).await? {
            if &crate::digest::Digest::of(&bytes) == digest {
                return Ok(Some(bytes));
            }
        }
        match self.blobs.get(digest).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(
                crate::blob::BlobError::Missing { .. } | crate::blob::BlobError::Corrupt { .. },
            ) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Runs a worker may take now. On a shared database, only those it can reach: started on this
    /// machine, or in a workspace under one of the roots it declared.
    pub async fn runnable(&self) -> Result<Vec<RunId>> {
        let pool = self.store.pool();
        let gone: Vec<String> = runs::active_owners(pool)
            .await?
            .into_iter()
            .filter(|owner| crate::worker::is_gone(owner))
            .collect();
        let shared = self.store.shared();
        Ok(runs::runnable(pool, now_ms(), &gone)
            .await?
            .into_iter()
            .filter(|r| !shared || self.reach.covers(r.machine.as_deref(), &r.workspace))
            .map(|r| r.id)
            .collect())
    }

    /// The spec run `row`'s agent is built from here. A run queued on another machine of a shared
    /// database starts only what this machine registered under the names it gives; the reason is
    /// the run's when it cannot.
    pub(crate) fn spec_here(&self, row: &runs::RunRow, spec: &str) -> Result<String, String> {
        let here = crate::worker::host_name();
        if !self.store.shared() || row.machine.as_deref() == Some(here.as_str()) {
            return Ok(spec.to_owned());
        }
        let from = row.machine.as_deref().unwrap_or("a machine nobody recorded");
        crate::agent::registry::localize(&row.agent_kind, spec, self.registry.as_ref())
            .map_err(|e| format!("this run was started on {from}, and {here} will not start it: {e}"))
    }

    /// Starts, for runs queued on other machines, only what `registry` holds.
    pub fn with_registry(mut self, registry: Arc<dyn crate::agent::registry::Registry>) -> Self {
        self.registry = registry;
        self
    }

    /// Declares the workspaces on other machines this worker can reach.
    pub fn with_reach(mut self, reach: crate::worker::Reach) -> Self {
        self.reach = Arc::new(reach);
        self
    }
}

#[cfg(test)]
mod tests;
