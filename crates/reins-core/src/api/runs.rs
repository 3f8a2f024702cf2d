//! Runs: creating them (from a plan, or for the LLM agent), driving them, a person's controls, and
//! the views of the list and of one run.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::{
    AgentLogView, AttemptView, AuditEventView, IntentView, Recovery, Reins, RetryView, RunDetail,
    RunSummary, RunView, StepView,
};
use crate::agent::script::Plan;
use crate::engine::stored;
use crate::engine::{
    Control, DriveOutcome, Observer, Progress, Resolved, ResumeMode, RollbackReport,
};
use crate::error::{Error, Result};
use crate::event::GcReport;
use crate::ids::RunId;
use crate::journal::Resolution;
use crate::run::RunState;
use crate::store::{self, audit, checkpoints, intents, runs};
use crate::workspace::Workspace;

/// Bytes of an external agent's stderr log a run's detail shows.
const AGENT_LOG_TAIL: usize = 8 * 1024;
/// How long a worker leaves a headless Claude Code session that could not be started again.
const HELD_BACK_MS: i64 = 60_000;
/// How long a worker leaves a headless Claude Code session another process runs.
const BUSY_MS: i64 = 1_000;

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
    /// Creates a queued run from a plan file on a workspace folder.
    pub async fn create_script_run(
        &self,
        plan_file: &Path,
        workspace: &Path,
        observer: &dyn Observer,
    ) -> Result<RunId> {
        let text = crate::input_file::read(plan_file, crate::input_file::Links::Follow)
            .map_err(|e| Error::Invalid(format!("the plan {} {e}", plan_file.display())))?;
        let plan = Plan::from_toml(&text, &plan_file.display().to_string())?;
        self.create_plan_run(&plan, workspace, observer).await
    }

    /// Creates a queued run of a plan already read.
    pub async fn create_plan_run(
        &self,
        plan: &Plan,
        workspace: &Path,
        observer: &dyn Observer,
    ) -> Result<RunId> {
        let ws = Workspace::open(workspace).map_err(|e| Error::Invalid(e.to_string()))?;
        let id = self.engine.create_script_run(plan, &ws).await?;
        observer.on(&Progress::Created {
            run: id,
            name: plan.name.clone(),
            workspace: ws.root().display().to_string(),
        });
        Ok(id)
    }

    /// Drives run `id` until it finishes or needs a person. A headless Claude Code session's run
    /// is carried on by starting Claude Code again on its session, which stops at the next card.
    pub async fn drive(&self, id: RunId, observer: &dyn Observer) -> Result<DriveOutcome> {
        let carried_on = matches!(
            self.run_state(id).await?,
            RunState::Queued | RunState::Running | RunState::PauseRequested
        );
        if let Some(spec) = self
            .engine
            .headless_claude(id)
            .await?
            .filter(|_| carried_on)
        {
            return match self.resume_headless_claude(id, spec, observer).await {
                Err(Error::Conflict(reason)) => Ok(DriveOutcome::Skipped {
                    state: self.run_state(id).await?,
                    reason,
                }),
                other => other.map(Self::claude_outcome),
            };
        }
        self.engine.drive(id, observer).await
    }

    /// Where a headless Claude Code session stopped, as a drive's outcome.
    fn claude_outcome(outcome: crate::api::ClaudeRunOutcome) -> DriveOutcome {
        if outcome.state.is_terminal() {
            DriveOutcome::Finished {
                state: outcome.state,
                summary: outcome.summary,
            }
        } else {
            DriveOutcome::NeedsHuman {
                state: outcome.state,
                reason: outcome.summary,
            }
        }
    }

    /// Drives runnable runs until none is left (`once`) or forever. Between looks it waits for a
    /// commit (on a shared database, any machine's: a run queued, an approval decided, a pause
    /// asked for) or at most `poll`, which also catches leases that ran out.
    pub async fn work(
        &self,
        once: bool,
        poll: Duration,
        observer: &dyn Observer,
    ) -> Result<WorkSummary> {
        let mut summary = WorkSummary::default();
        // Runs this loop let go into a retry backoff: a drain pauses them where they wait.
        let mut backing_off: Vec<RunId> = Vec::new();
        // Headless Claude Code sessions that could not be started again, and until when they wait.
        let mut held_back: std::collections::HashMap<RunId, i64> = Default::default();
        // Pending approvals whose files change on disk are superseded at once; overdue ones expire.
        let mut watch = match crate::approval::watch::Watch::new() {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("cannot watch files of pending approvals ({e}); they are re-checked when decided");
                None
            }
        };
        // A shared database out of reach (restarting, the network) is waited for, with backoff.
        let mut reconnect = Reconnect::default();
        let mut waiter = self.store().waiter();
        // Another worker claimed a run between this one's look and its claim.
        let mut contended = false;
        loop {
            if self.engine.draining() {
                return self.drained(summary, &backing_off).await;
            }
            let looked = match watch.as_mut() {
                Some(w) => self.watch_approvals(w).await.map(|_| ()),
                None => self.engine.expire_due().await.map(|_| ()),
            };
            let now = crate::clock::now_ms();
            held_back.retain(|_, until| *until > now);
            let looked = match looked {
                Ok(()) => self.engine.runnable().await,
                Err(e) => Err(e),
            };
            let mut ids = match looked {
                Ok(ids) => {
                    reconnect.reached();
                    ids
                }
                Err(e) if reconnect.waits_out(&e) => {
                    self.sleep_unless_draining(reconnect.next()).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            ids.retain(|id| !held_back.contains_key(id));
            // Oldest first. But when other workers took runs from under this one on its last pass,
            // the team's workers are racing down the same list: this one starts at a place of its
            // own in it, so they claim different runs instead of all but one losing each claim.
            if std::mem::take(&mut contended) && ids.len() > 1 {
                let start = uuid::Uuid::new_v4().as_u128() % ids.len() as u128;
                ids.rotate_left(usize::try_from(start).unwrap_or(0));
            }
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
                self.nap(&mut waiter, poll).await;
                continue;
            }
            for id in ids {
                if self.engine.draining() {
                    return self.drained(summary, &backing_off).await;
                }
                if let Some(spec) = self.engine.headless_claude(id).await? {
                    match self.resume_headless_claude(id, spec, observer).await {
                        Ok(outcome) => match Self::claude_outcome(outcome) {
                            DriveOutcome::Finished { .. } => summary.finished += 1,
                            DriveOutcome::NeedsHuman {
                                state: RunState::Paused,
                                ..
                            } => summary.paused += 1,
                            _ => summary.waiting += 1,
                        },
                        // Its own `reins run --claude` drives it: look again later.
                        Err(Error::Conflict(_)) => {
                            held_back.insert(id, crate::clock::now_ms() + BUSY_MS);
                            continue;
                        }
                        Err(e) => {
                            tracing::warn!(run_id = %id, "cannot start Claude Code again for this run; trying again in a minute: {e}");
                            held_back.insert(id, crate::clock::now_ms() + HELD_BACK_MS);
                            continue;
                        }
                    }
                    summary.driven += 1;
                    continue;
                }
                let outcome = match self.engine.drive(id, observer).await {
                    Ok(outcome) => outcome,
                    // Its lease runs out while the database is away; it is taken up again after.
                    Err(e) if reconnect.waits_out(&e) => {
                        self.sleep_unless_draining(reconnect.next()).await;
                        break;
                    }
                    Err(e) => return Err(e),
                };
                match outcome {
                    // Claimed by someone else between our look and our claim, or no longer runnable.
                    DriveOutcome::Skipped { .. } => {
                        contended = true;
                        continue;
                    }
                    DriveOutcome::Finished { .. } => summary.finished += 1,
                    DriveOutcome::NeedsHuman {
                        state: RunState::Paused,
                        ..
                    } => summary.paused += 1,
                    DriveOutcome::NeedsHuman { .. } => summary.waiting += 1,
                    DriveOutcome::Retrying { .. } => {
                        summary.retrying += 1;
                        if !backing_off.contains(&id) {
                            backing_off.push(id);
                        }
                    }
                    DriveOutcome::Lost { .. } => summary.lost += 1,
                }
                summary.driven += 1;
            }
        }
    }
}

/// Waiting for a database that went away: 250 ms, doubling to 5 s, said once per outage.
#[derive(Default)]
struct Reconnect {
    failures: u32,
}

impl Reconnect {
    /// Whether `e` means the database is out of reach for now (then the caller waits `next()`).
    fn waits_out(&mut self, e: &Error) -> bool {
        let transient_store = matches!(e, Error::Store(crate::store::StoreError::Sqlx(_)))
            && e.class() == crate::failure::FailureClass::Transient;
        if transient_store {
            if self.failures == 0 {
                tracing::warn!("the database is out of reach ({e}); connecting again with backoff");
            }
            self.failures += 1;
        }
        transient_store
    }

    fn next(&self) -> Duration {
        let exp = self.failures.saturating_sub(1).min(5);
        Duration::from_millis((250u64 << exp).min(5_000))
    }

    fn reached(&mut self) {
        if self.failures > 0 {
            tracing::info!("the database is back after {} attempt(s)", self.failures);
        }
        self.failures = 0;
    }
}

impl Reins {
    /// The end of a drained work loop: every run it let go into a retry backoff is paused where
    /// it waits (its checkpoint verified), so the process exits now rather than after the backoff.
    async fn drained(
        &self,
        mut summary: WorkSummary,
        backing_off: &[RunId],
    ) -> Result<WorkSummary> {
        for id in backing_off {
            if self.engine.pause_backoff_for_drain(*id).await?.is_some() {
                summary.paused += 1;
            }
        }
        Ok(summary)
    }

    /// On drain, pauses a run waiting out a retry backoff (see [`Reins::work`]); None when it is not
    /// waiting one out.
    pub async fn pause_backoff_for_drain(&self, id: RunId) -> Result<Option<Control>> {
        self.engine.pause_backoff_for_drain(id).await
    }

    /// Waits for a commit or `total`, whichever is first, and wakes early for a drain.
    async fn nap(&self, waiter: &mut crate::store::wake::Waiter, total: Duration) {
        tokio::select! {
            _ = waiter.wait(total) => {}
            () = self.sleep_unless_draining(total) => {}
        }
    }

    /// Sleeps for `total`, waking early when a drain is requested.
    pub async fn sleep_unless_draining(&self, total: Duration) {
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

    /// Wakes when something commits: in this process, and on a shared database on any machine
    /// (LISTEN/NOTIFY). Screens that poll the change stamp wait on it between looks.
    pub fn changes(&self) -> crate::store::wake::Waiter {
        self.store().waiter()
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
        Ok(runs::list(self.store().pool())
            .await?
            .into_iter()
            .map(|(r, steps)| RunSummary::of(r, steps))
            .collect())
    }

    /// Every checkpoint of a run, read back, hashed and decoded: what `status` says is what is
    /// wrong with it, or "ok".
    pub async fn checkpoints(&self, id: RunId) -> Result<Vec<stored::CheckpointSummary>> {
        runs::get(self.store().pool(), id).await?;
        let inspected = stored::inspect(self.store(), self.engine.blobs(), id).await?;
        Ok(inspected.iter().map(|i| i.summary()).collect())
    }

    pub async fn run_detail(&self, id: RunId) -> Result<RunDetail> {
        let pool = self.store().pool();
        let row = runs::get(pool, id).await?;
        let events = audit::for_run(pool, id).await?;
        let names = crate::audit::sentence::Lookup::of_rows(self.store(), &events).await?;
        let attempts = store::attempts::list(pool, id).await?;
        let inspected = stored::inspect(self.store(), self.engine.blobs(), id).await?;
        let analysis = stored::analyse(self.store(), id, &inspected).await?;
        let files = analysis
            .point
            .and_then(|p| inspected.iter().find(|i| i.seq == p))
            .and_then(|i| i.payload.as_ref().ok())
            .map(|cp| cp.files.clone())
            .unwrap_or_default();
        let mut approvals = Vec::new();
        for a in store::approvals::list(pool, None, Some(id)).await? {
            approvals.push(self.approval_view(a).await?);
        }
        let agent_log = match self.engine.agent_log(id) {
            Some(path) => crate::stderr::read_tail(&path, AGENT_LOG_TAIL)
                .map_err(|source| Error::Io {
                    context: format!("reading the agent log {}", path.display()),
                    source,
                })?
                .map(|tail| AgentLogView {
                    path: path.display().to_string(),
                    tail,
                }),
            None => None,
        };
        Ok(RunDetail {
            agent_log,
            run: RunView::from(row),
            recovery_summary: attempts
                .iter()
                .rev()
                .filter_map(|a| a.recovery.clone())
                .find(crate::resume::RecoverySummary::interrupted),
            attempts: attempts.into_iter().map(AttemptView::from).collect(),
            retries: store::retries::list(pool, id)
                .await?
                .into_iter()
                .map(RetryView::from)
                .collect(),
            steps: {
                let mut steps: Vec<StepView> = store::steps::list(pool, id)
                    .await?
                    .into_iter()
                    .map(StepView::from)
                    .collect();
                super::types::link_calls(&mut steps);
                steps
            },
            checkpoints: inspected.iter().map(|i| i.summary()).collect(),
            intents: intents::list(pool, id)
                .await?
                .into_iter()
                .map(IntentView::from)
                .collect(),
            approvals,
            recovery: Recovery {
                point: analysis.point,
                damage: analysis.damage,
                pruned_through: checkpoints::pruned_through(pool, id).await?,
            },
            files,
            audit_events: events.len(),
            audit: events
                .into_iter()
                .map(|row| AuditEventView::read(row, &names))
                .collect::<Result<_>>()?,
        })
    }

    pub async fn rollback(&self, id: RunId, to: i64, dry_run: bool) -> Result<RollbackReport> {
        self.engine.rollback(id, to, dry_run).await
    }

    /// Removes all but the last `keep` checkpoints of finished runs and the blobs nothing needs.
    pub async fn gc(&self, keep: usize, dry_run: bool) -> Result<GcReport> {
        self.engine.gc(keep, dry_run).await
    }
}
