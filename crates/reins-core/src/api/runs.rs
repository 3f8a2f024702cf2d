//! Runs: creating them (from a plan, or for the LLM agent), driving them, a person's controls, and
//! the views of the list and of one run.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::{AcpRunRequest, LlmRunRequest};
use super::{Reins, RunDetail, RunSummary};
use crate::agent::claude::Start as ClaudeStart;
use crate::agent::script::Plan;
use crate::budget::Budget;
use crate::engine::stored::CheckpointSummary;
use crate::engine::WorkSummary;
use crate::engine::{
    Control, DriveOutcome, Observer, Progress, Resolved, ResumeMode, RollbackReport,
};
use crate::error::{Error, Result};
use crate::event::GcReport;
use crate::ids::RunId;
use crate::journal::Resolution;
use crate::run::RunState;
use crate::store::{self, audit, runs};
use crate::workspace::Workspace;

/// What a run is started for: its agent, and what that agent is asked.
#[derive(Clone, Debug)]
pub enum RunRequest {
    /// A plan file (TOML) of tool calls, read now.
    PlanFile(std::path::PathBuf),
    /// A plan already read.
    Plan(Plan),
    /// The LLM agent on a goal.
    Llm(LlmRunRequest),
    /// An external agent over ACP on a goal.
    Acp(AcpRunRequest),
    /// Claude Code headless: a new session, or one resumed.
    Claude(ClaudeStart),
}

impl From<&Path> for RunRequest {
    fn from(plan_file: &Path) -> Self {
        RunRequest::PlanFile(plan_file.to_owned())
    }
}

impl From<&std::path::PathBuf> for RunRequest {
    fn from(plan_file: &std::path::PathBuf) -> Self {
        RunRequest::PlanFile(plan_file.clone())
    }
}

impl From<&Plan> for RunRequest {
    fn from(plan: &Plan) -> Self {
        RunRequest::Plan(plan.clone())
    }
}

impl From<LlmRunRequest> for RunRequest {
    fn from(req: LlmRunRequest) -> Self {
        RunRequest::Llm(req)
    }
}

impl From<AcpRunRequest> for RunRequest {
    fn from(req: AcpRunRequest) -> Self {
        RunRequest::Acp(req)
    }
}

impl From<ClaudeStart> for RunRequest {
    fn from(req: ClaudeStart) -> Self {
        RunRequest::Claude(req)
    }
}

impl Reins {
    /// Creates a queued run on a workspace folder. A headless Claude Code session resumed is the
    /// session's run, found again (refused while another process runs it). The keys the agent is
    /// given must exist now.
    pub async fn create_run(
        &self,
        req: impl Into<RunRequest>,
        workspace: &Path,
        observer: &dyn Observer,
    ) -> Result<RunId> {
        self.create_run_within(req, workspace, Budget::default(), observer)
            .await
    }

    /// A new run that may spend `budget` before it pauses and asks; each limit it leaves out comes
    /// from the Settings' default budget, then from `[budget]` in `policy.toml`.
    pub async fn create_run_within(
        &self,
        req: impl Into<RunRequest>,
        workspace: &Path,
        budget: Budget,
        observer: &dyn Observer,
    ) -> Result<RunId> {
        let budget = self.settings().budget_for(budget).await?;
        let ws = Workspace::open(workspace).map_err(|e| Error::Invalid(e.to_string()))?;
        let (new, told, session) = match req.into() {
            RunRequest::PlanFile(file) => {
                let text = crate::input_file::read(&file, crate::input_file::Links::Follow)
                    .map_err(|e| Error::Invalid(format!("the plan {} {e}", file.display())))?;
                let plan = Plan::from_toml(&text, &file.display().to_string())?;
                (plan.new_run(), None, false)
            }
            RunRequest::Plan(plan) => (plan.new_run(), None, false),
            RunRequest::Llm(req) => (self.llm_spec(req).await?.new_run()?, None, false),
            RunRequest::Acp(req) => (self.acp_spec(req)?.new_run(), None, false),
            RunRequest::Claude(start) => {
                let resumed = start.resume.is_some();
                let (spec, told) = start.spec(ws.root())?;
                (spec.new_run(), told, resumed)
            }
        };
        for name in &new.keys {
            // Said now, not after the run has started: the key must exist.
            let store = Arc::clone(self.engine.secrets());
            if crate::keys::get_blocking(store, name).await?.is_none() {
                return Err(crate::keys::KeyError::Missing(name.clone()).into());
            }
        }
        let id = if session {
            let id = self.engine.session_run(&new, &ws, budget).await?;
            if let Some(reason) = self.engine.held_elsewhere_run(id).await? {
                return Err(Error::Conflict(reason));
            }
            // Resuming a session goes on with it: a run paused (Ctrl-C, `reins pause`) is queued.
            if self.run_state(id).await? == RunState::Paused {
                self.engine.resume(id, ResumeMode::Continue).await?;
            }
            id
        } else {
            self.engine.create_run_within(&new, &ws, budget).await?
        };
        if let Some(told) = told {
            let told = serde_json::to_value(&told).map_err(|e| Error::Invalid(e.to_string()))?;
            self.engine.tell(id, told).await?;
        }
        observer.on(&Progress::Created {
            run: id,
            name: new.name.clone(),
            workspace: ws.root().display().to_string(),
        });
        Ok(id)
    }

    /// Drives run `id` until it finishes or needs a person.
    pub async fn drive(&self, id: RunId, observer: &dyn Observer) -> Result<DriveOutcome> {
        self.engine.drive(id, observer).await
    }

    /// Drives runnable runs until none is left (`once`) or forever; between looks it waits for a
    /// commit, at most `poll`.
    pub async fn work(
        &self,
        once: bool,
        poll: Duration,
        observer: &dyn Observer,
    ) -> Result<WorkSummary> {
        self.engine.work(once, poll, observer).await
    }

    /// On drain, pauses a run waiting out a retry backoff (see [`Reins::work`]); None when it is not
    /// waiting one out.
    pub async fn pause_backoff_for_drain(&self, id: RunId) -> Result<Option<Control>> {
        self.engine.pause_backoff_for_drain(id).await
    }

    /// Sleeps for `total`, waking early when a drain is requested.
    pub async fn sleep_unless_draining(&self, total: Duration) {
        self.engine.sleep_unless_draining(total).await
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
        // Resumed as it is, it would pause again at once: the person decides on the budget.
        if let Some(why) = self.engine.held_by_budget(id).await? {
            return Err(Error::Conflict(format!("run {id} is paused: {why}")));
        }
        self.engine.resume(id, mode).await
    }

    /// A person's decision on an effect whose outcome is unknown.
    pub async fn resolve(
        &self,
        intent: &str,
        resolution: Resolution,
        note: Option<&str>,
    ) -> Result<Resolved> {
        self.engine.resolve(intent, resolution, note).await
    }

    pub async fn cancel(&self, id: RunId, reason: Option<&str>) -> Result<Control> {
        self.engine.cancel(id, reason).await
    }

    /// Changes whenever anything a screen shows changes, in this process or another one on the
    /// same data dir (the audit chain's head and the latest run update).
    pub async fn change_stamp(&self) -> Result<(i64, i64)> {
        Ok(audit::change_stamp(self.store().pool()).await?)
    }

    /// What screens watch: whether what they show changed, looked at after every commit (this
    /// process's, any machine's on a shared database, another process's on the database file) and
    /// at least every `poll`.
    pub fn changes(&self, poll: Duration) -> crate::store::wake::Changes {
        self.store().changes(poll)
    }

    pub async fn run_state(&self, id: RunId) -> Result<RunState> {
        Ok(runs::get(self.store().pool(), id).await?.state)
    }

    /// Waits until `done(state)` holds and returns that state: looked at after every commit
    /// (any machine's, on a shared database) and at least every `poll`.
    pub async fn wait_until(
        &self,
        id: RunId,
        poll: Duration,
        done: fn(RunState) -> bool,
    ) -> Result<RunState> {
        let mut waiter = self.store().waiter();
        loop {
            let state = runs::get(self.store().pool(), id).await?.state;
            if done(state) {
                return Ok(state);
            }
            waiter.wait(poll).await;
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
        self.views().runs().await
    }

    /// Every checkpoint of a run, read back, hashed and decoded: what `status` says is what is
    /// wrong with it, or "ok".
    pub async fn checkpoints(&self, id: RunId) -> Result<Vec<CheckpointSummary>> {
        self.views().checkpoints(id).await
    }

    pub async fn run_detail(&self, id: RunId) -> Result<RunDetail> {
        self.views().run_detail(id).await
    }

    pub async fn rollback(&self, id: RunId, to: i64, dry_run: bool) -> Result<RollbackReport> {
        self.engine.rollback(id, to, dry_run).await
    }

    /// Removes all but the last `keep` checkpoints of finished runs and the blobs nothing needs.
    pub async fn gc(&self, keep: usize, dry_run: bool) -> Result<GcReport> {
        self.engine.gc(keep, dry_run).await
    }
}
