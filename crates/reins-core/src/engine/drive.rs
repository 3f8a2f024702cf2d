//! One worker's hold on one run: the agent loop, its safe points, and the ways a drive ends —
//! finished, paused, waiting for a person, or let go to be retried. Every write goes through the
//! one commit path as this worker (`commit`), so a write after the run was taken away commits
//! nothing.

use crate::agent::{self, Agent, Move};
use crate::event::{self as ev, Actor};
use crate::checkpoint::{Checkpoint, Level, Meta};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::run::{RunEvent, RunState};
use crate::step::StepKind;
use crate::store::write::{Transition, Write};
use crate::store::{audit, checkpoints, runs, steps, StoreError};
use crate::workspace::Workspace;

use super::stored;
use super::commit::{Applied, Change, Report};
use super::heartbeat::Heartbeat;
use super::watch::Seen;
use super::{DriveOutcome, Engine, Observer, Progress};

pub(super) enum StartError {
    /// The run cannot go on without a person (workspace gone, stored agent unreadable…).
    Suspend(String),
    Fatal(Error),
}

impl From<Error> for StartError {
    fn from(e: Error) -> Self {
        StartError::Fatal(e)
    }
}

impl From<StoreError> for StartError {
    fn from(e: StoreError) -> Self {
        StartError::Fatal(e.into())
    }
}

pub(super) use super::recover::{settled_by_person, stopped_because, Resumption};

/// Resolves once the run must stop at its next safe point (see [`Drive::stopping`]), looked at
/// every quarter second, and the run's own row read once a second (a pause or a cancellation
/// from another process is seen in a second, not at the next heartbeat); never while it may go on.
async fn must_stop(
    e: &Engine,
    run: RunId,
    watch: &super::heartbeat::LeaseWatch,
    owner: &audit::Owner,
) {
    let mut ticks = 0u32;
    while !Drive::stopping(e, watch, owner) {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        ticks += 1;
        if ticks.is_multiple_of(4) && read_row(e, run, watch).await == Some(RunState::PauseRequested)
        {
            owner.saw_pause(true);
        }
    }
}

/// Reads the run's own row now: a run cancelled (or ended) by another process is lost to this
/// worker at once, not at the next heartbeat. Returns its state; None when it cannot be read now
/// (the heartbeat still tells).
async fn read_row(
    e: &Engine,
    run: RunId,
    watch: &super::heartbeat::LeaseWatch,
) -> Option<RunState> {
    let state = runs::get(e.store.pool(), run).await.ok()?.state;
    if !matches!(state, RunState::Running | RunState::PauseRequested) {
        watch.mark_lost();
    }
    Some(state)
}

/// How a drive stops for a person: the move, the state it leaves the run in, what the person is
/// told, and how the attempt ends.
pub(super) struct Stop {
    pub transition: Transition,
    pub state: RunState,
    pub message: String,
    pub attempt: String,
}

pub(super) struct Drive<'a> {
    pub(super) e: &'a Engine,
    pub(super) obs: &'a dyn Observer,
    pub(super) run: RunId,
    pub(super) ws: Workspace,
    pub(super) agent: Box<dyn Agent>,
    pub(super) attempt: i64,
    /// The run's context as of the last checkpoint, updated as steps complete.
    pub(super) cp: Checkpoint,
    /// The highest step seq the journal held when this drive started: steps up to it are reused.
    pub(super) journal_through: i64,
    pub(super) resumed: Resumption,
    /// When this attempt began (ms): what the journal holds from before it, an earlier attempt did.
    pub(super) started_at: i64,
    /// What the harness serves the agent with in this attempt, by what the agent can do.
    pub(super) served: Served,
    /// The workspace as last seen, for an agent Reins watches (`watch.rs`).
    pub(super) watch: Option<super::watch::Watch>,
    /// Proves ownership in every commit (its fence) and remembers the audit chain's head.
    owner: audit::Owner,
    /// Keeps the lease alive in the background and reports what it sees.
    heartbeat: Heartbeat,
    /// A file effect's confirmation waiting for the next commit (`held.rs`).
    pub(super) held: std::sync::Mutex<Option<Change>>,
}

/// What the harness serves an agent with during one attempt, by capability: model calls for an
/// agent that thinks (its API key, the token counts), the MCP servers of one that offers tools,
/// and the outside requests of one that takes them.
#[derive(Default)]
pub(super) struct Served {
    /// The API key, once looked up in this attempt.
    pub(super) api_key: Option<crate::keys::Secret>,
    /// Token counts of context parts already counted in this attempt (see `think.rs`).
    pub(super) token_counts: super::tokens::TokenCounts,
    /// The last model call's candidates, which the next call's manifest is kept as a change to.
    pub(super) context: Option<crate::context::chain::Link>,
    /// The run's MCP servers, started for this attempt (see `mcp.rs`).
    pub(super) mcp: Option<crate::mcp::Hub>,
    /// The outside request handed to the agent and not yet tied to a move (`take.rs`).
    pub(super) request: Option<String>,
    /// Outside requests taken, marked so with the drive's next commit.
    pub(super) taken: std::sync::Mutex<Vec<Write>>,
    /// Another request waited behind the one last handed over.
    pub(super) more: bool,
    /// The request of the asker that drives the run itself, handed over first (`claim.rs`), and
    /// how it was taken: by the step that decides it, or only recorded.
    pub(super) carried: Option<serde_json::Value>,
    pub(super) carried_taken: Option<Option<i64>>,
    /// The request handed over is the asker's own, in hand: it has no row to mark.
    pub(super) in_hand: bool,
    /// This drive is an asker's, for its own request: other requests are their askers' to drive.
    pub(super) asker: bool,
}

impl<'a> Drive<'a> {
    pub(super) async fn start(
        e: &'a Engine,
        obs: &'a dyn Observer,
        row: &runs::RunRow,
        fence: i64,
        claimed_until: i64,
        attempt: i64,
        adopted: bool,
    ) -> Result<Drive<'a>, StartError> {
        let ws = Workspace::open(std::path::Path::new(&row.workspace))
            .map_err(|err| StartError::Suspend(format!("the workspace cannot be opened: {err}")))?;
        let spec = runs::spec(e.store.pool(), row.id).await?;
        let spec = e
            .opened_text(&spec, "the run's plan")
            .await
            .map_err(|err| StartError::Suspend(err.to_string()))?;
        let here = e.spec_here(row, &spec).map_err(StartError::Suspend)?;
        let mut agent = agent::build(&row.agent_kind, &here, &e.services(row)).map_err(|err| {
            StartError::Suspend(format!("the run's agent cannot be rebuilt: {err}"))
        })?;
        let mismatches = row.compat.mismatches(&crate::compat::Compat::current(
            agent.kind(),
            agent.version(),
            &spec,
        ));
        if !mismatches.is_empty() {
            return Err(StartError::Suspend(format!(
                "incompatible with this build: {}. `reins resume {} --force` resumes anyway; `reins resume {} --start-over` starts again from the original input",
                crate::compat::describe(&mismatches),
                row.id,
                row.id
            )));
        }
        let owner = audit::Owner::new(row.id, fence);
        let (analysis, verified) = stored::analyse_for_resume(&e.store, &e.blobs, row.id).await?;
        let fresh: Vec<_> = analysis.damage.iter().filter(|d| !d.acknowledged).collect();
        if !fresh.is_empty() {
            let now = now_ms();
            let mut change = Change::rows(vec![Write::RenewLease {
                fence,
                until: now + e.lease_ms,
            }]);
            for d in &fresh {
                change.rows.push(Write::DamageAcknowledged {
                    seq: d.seq,
                    kind: d.kind,
                });
                change.events.push(audit::Event::new(
                    Actor::Harness,
                    Some(row.id),
                    ev::DamageDetected {
                        seq: d.seq,
                        kind: d.kind,
                        recovery_point: analysis.point,
                    },
                ));
                change.report.push(Report::Now(Progress::Damage {
                    seq: d.seq,
                    kind: d.kind,
                }));
            }
            e.commit(Some(row.id), change, None, obs).await?;
        }
        let cp = match analysis.point {
            Some(point) => match stored::load(&e.store, &e.blobs, row.id, point).await? {
                Ok(cp) => {
                    if point > verified {
                        // Verified now: the next resume starts from here.
                        let sha256 = checkpoints::get(e.store.pool(), row.id, point).await?.sha256;
                        let mark = Write::CheckpointsVerified {
                            through: point,
                            sha256,
                        };
                        e.commit(Some(row.id), Change::rows(vec![mark]), None, obs).await?;
                    }
                    cp
                }
                Err(err) => {
                    return Err(StartError::Suspend(format!(
                        "recovery checkpoint {point} unreadable: {err}"
                    )))
                }
            },
            // Nothing usable: start over from the original input. Completed steps are still reused
            // from the journal, so no effect runs twice.
            None => Checkpoint {
                goal: row.goal.clone(),
                next_step: 1,
                ..Checkpoint::default()
            },
        };
        let state = e
            .opened_value(&cp.agent, "the agent's checkpointed state")
            .await
            .map_err(|err| StartError::Suspend(err.to_string()))?;
        agent.restore(&state).map_err(|err| {
            StartError::Suspend(format!(
                "the agent cannot resume from its checkpoint: {err}"
            ))
        })?;
        if let Some(at) = &cp.history {
            if let Err(err) = e.restore_history(row.id, at, agent.as_mut()).await? {
                return Err(StartError::Suspend(format!(
                    "the agent cannot resume from checkpoint {}: {err}",
                    analysis.point.unwrap_or(0)
                )));
            }
        }
        let resumed_from = if adopted || cp.next_step > 1 {
            analysis.point
        } else {
            None
        };
        obs.on(&Progress::Attempt {
            run: row.id,
            attempt,
            fence,
            adopted,
            resumed_from,
        });
        let journal_through = steps::max_seq(e.store.pool(), row.id).await?;
        let resumed = Resumption {
            from: resumed_from,
            stopped_because: stopped_because(e, row).await?,
            settled: settled_by_person(e, row.id).await?,
            ended_processes: Vec::new(),
        };
        owner.saw_pause(row.state == RunState::PauseRequested);
        Ok(Drive {
            heartbeat: Heartbeat::start(
                e.store.pool().clone(),
                row.id,
                fence,
                e.lease_ms,
                claimed_until,
            ),
            owner,
            held: std::sync::Mutex::new(None),
            journal_through,
            resumed,
            started_at: now_ms(),
            served: Served::default(),
            watch: None,
            e,
            obs,
            run: row.id,
            ws,
            agent,
            attempt,
            cp,
        })
    }

    /// The agent loop.
    pub(super) async fn run(&mut self) -> Result<DriveOutcome> {
        self.end_orphans().await?;
        if let Some(outcome) = self.settle_journal().await? {
            return Ok(outcome);
        }
        let taken = self.orient().await?;
        if let Some(outcome) = self.start_mcp().await? {
            return Ok(outcome);
        }
        self.start_watch(taken).await?;
        if let Some(seq) = self.cp.current_step {
            let question = steps::get(self.e.store.pool(), self.run, seq)
                .await?
                .filter(|s| s.kind == StepKind::Question);
            let outcome = match question {
                Some(step) => self.continue_question(step).await?,
                None => self.continue_review(seq).await?,
            };
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
        loop {
            // The last step is committed: its answer may now reach the agent.
            if let Some(x) = self.agent.external() {
                x.deliver();
            }
            if let Some(outcome) = self.safe_point().await? {
                return Ok(outcome);
            }
            let takes_requests = self.hand_request().await?;
            // An agent waiting on something outside Reins (an external agent mid-turn) is
            // interrupted when the run must stop here: the next safe point then stops it. One
            // that takes outside requests is handed one that arrives meanwhile.
            let watch = self.heartbeat.watch();
            let next = tokio::select! {
                next = self.agent.next(self.obs) => next,
                () = must_stop(self.e, self.run, watch, &self.owner) => {
                    if let Some(x) = self.agent.external() {
                        x.interrupt().await;
                    }
                    self.record_accounts().await?;
                    if let Seen::Unasked { change, reason } = self.look(None).await? {
                        return self.suspend_with(*change, &reason).await;
                    }
                    continue;
                }
                () = super::take::request_arrives(self.e, self.run), if takes_requests => continue,
            };
            // The outside request the agent was handed is taken with this move: by the step it
            // proposes, or only recorded.
            let seq = matches!(next, Ok(Move::Call { .. })).then_some(self.cp.next_step);
            self.tie_request(seq);
            let started = self.agent.external().and_then(|x| x.take_started());
            if let Some((pid, command)) = started {
                if let Err(e) = self.e.track_pid(self.run, self.cp.next_step, pid, &command).await {
                    tracing::warn!("could not record the agent's process {pid}: {e}");
                }
            }
            self.record_accounts().await?;
            let next = match next {
                Ok(m) => m,
                Err(err) => {
                    return self
                        .finish(RunState::Failed, &format!("agent error: {err}"))
                        .await
                }
            };
            // What the agent changed since its last move, held against what was allowed.
            if let Seen::Unasked { change, mut reason } = self.look(Some(&next)).await? {
                if let Move::Fail { reason: r } | Move::Suspend { reason: r } = &next {
                    reason.push_str(&format!("; and then {r}"));
                }
                return self.suspend_with(*change, &reason).await;
            }
            let stopped = match next {
                Move::Think(input) => self.think(input).await?,
                Move::Ask { question } => self.ask(question).await?,
                Move::Prompt { text } => self.brief(text).await?,
                Move::Call { call, why } => self.step(call, why, None).await?,
                Move::Bound { call, permission } => {
                    self.step(call, None, Some(permission)).await?
                }
                Move::Finish { summary } => {
                    return self.finish(RunState::Succeeded, &summary).await
                }
                Move::Fail { reason } => return self.finish(RunState::Failed, &reason).await,
                Move::Suspend { reason } => return self.suspend(&reason).await,
                Move::Detach if self.more_requests().await? => continue,
                Move::Detach => return self.detach().await,
            };
            if let Some(outcome) = stopped {
                return Ok(outcome);
            }
        }
    }

    /// Commits `change` as this worker, renewing the lease when less than half of it is left (the
    /// heartbeat normally keeps it longer).
    pub(super) async fn commit(&self, mut change: Change) -> Result<Applied> {
        if let Ok(mut taken) = self.served.taken.lock() {
            change.rows.extend(taken.drain(..));
        }
        let now = now_ms();
        let watch = self.heartbeat.watch();
        if watch.until() - now < self.e.lease_ms / 2 {
            change.rows.insert(
                0,
                Write::RenewLease {
                    fence: self.owner.fence,
                    until: now + self.e.lease_ms,
                },
            );
        }
        let applied = self.apply_with_held(change).await?;
        if watch.until() - now < self.e.lease_ms / 2 {
            watch.renewed(now + self.e.lease_ms);
        }
        Ok(applied)
    }

    /// Proves this worker's ownership in its commits.
    pub(super) fn owner(&self) -> &audit::Owner {
        &self.owner
    }

    /// The fence this worker holds the run with.
    pub(super) fn fence(&self) -> i64 {
        self.owner.fence
    }

    /// Whether the run was lost (taken over, cancelled) while this worker held it.
    pub(super) fn heartbeat_lost(&self) -> bool {
        self.heartbeat.watch().lost()
    }

    /// Reads the run's own row now (see [`read_row`]).
    pub(super) async fn read_own_row(&self) {
        read_row(self.e, self.run, self.heartbeat.watch()).await;
    }

    /// Whether this worker may still start an effect: it has not lost the run, and enough of its
    /// lease is left that nobody can take the run over before the effect has begun. A worker frozen
    /// past this point (stopped, swapped out) finds it false when it wakes, and runs nothing.
    pub(super) fn may_run_effect(&self) -> bool {
        let watch = self.heartbeat.watch();
        !watch.lost() && watch.until() - now_ms() > self.e.lease_ms / 4
    }

    /// Between steps: stop here when the run was lost, a person asked to pause, or the worker drains.
    async fn safe_point(&mut self) -> Result<Option<DriveOutcome>> {
        if self.heartbeat.watch().lost() {
            return Ok(Some(DriveOutcome::Lost {
                reason: "another worker owns the run now, or it is no longer running".into(),
            }));
        }
        let draining = self.e.draining();
        if draining || self.owner.pause_requested() || self.heartbeat.watch().pause_requested() {
            return self.pause_here(draining).await.map(Some);
        }
        self.within_budget().await
    }

    /// Whether the run must stop at the next safe point: lost, asked to pause, or draining.
    fn stopping(e: &Engine, watch: &super::heartbeat::LeaseWatch, owner: &audit::Owner) -> bool {
        watch.lost() || e.draining() || owner.pause_requested() || watch.pause_requested()
    }

    /// Ends this attempt with the run waiting for a person: `change` commits with the stop's move,
    /// and the observer hears why.
    pub(super) async fn stop(&mut self, change: Change, stop: Stop) -> Result<DriveOutcome> {
        let Stop {
            transition,
            state,
            message,
            attempt,
        } = stop;
        if matches!(state, RunState::AwaitingApproval | RunState::AwaitingInput) {
            // The person answers, and this process may carry the answer on to the same agent.
            if let Some(x) = self.agent.external() {
                x.keep_alive();
            }
        }
        let change = change
            .moving(transition)
            .ending_attempt(attempt)
            .report(Report::Now(Progress::Waiting {
                state,
                reason: message.clone(),
            }));
        self.commit(change).await?;
        Ok(DriveOutcome::NeedsHuman {
            state,
            reason: message,
        })
    }

    /// Suspends the run for a person, with the reason.
    pub(super) async fn suspend(&mut self, reason: &str) -> Result<DriveOutcome> {
        self.suspend_with(Change::default(), reason).await
    }

    /// Suspends the run with `change` (what it stops for) in the same commit.
    pub(super) async fn suspend_with(&mut self, change: Change, reason: &str) -> Result<DriveOutcome> {
        let change = change.event(audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::Reason {
                reason: reason.into(),
            },
        ));
        let stop = Stop {
            transition: Transition::Moves(vec![RunEvent::Suspend], Some(reason.into())),
            state: RunState::Suspended,
            message: reason.into(),
            attempt: format!("suspended: {reason}"),
        };
        self.stop(change, stop).await
    }

    /// Writes a checkpoint of the context as it stands, alone in its change; returns its seq.
    pub(super) async fn write_checkpoint(&mut self, level: Level, note: String) -> Result<i64> {
        let change = Change::default().checkpoint(self.checkpoint(level, note)?);
        Ok(self.commit(change).await?.checkpoint.unwrap_or(0))
    }

    /// The context as it stands, stamped with `note` and encoded for a checkpoint.
    pub(super) fn checkpoint(
        &mut self,
        level: Level,
        note: String,
    ) -> Result<super::commit::Prepared> {
        self.cp.agent = self.agent.state();
        let history = self.new_history();
        self.cp.meta = Meta {
            attempt: self.attempt,
            fence: self.owner.fence,
            written_at: now_ms(),
            note,
        };
        let mut prepared = self.e.prepare(&self.cp, level)?;
        prepared.history = history;
        Ok(prepared)
    }

    async fn finish(&mut self, state: RunState, summary: &str) -> Result<DriveOutcome> {
        let checkpoint = self.checkpoint(Level::Task, format!("finished: {state}"))?;
        let event = if state == RunState::Succeeded {
            RunEvent::Succeed
        } else {
            RunEvent::Fail
        };
        let last_error = (state != RunState::Succeeded).then(|| summary.to_owned());
        let change = Change::default()
            .checkpoint(checkpoint)
            .event(audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::Finished {
                    state,
                    summary: summary.into(),
                },
            ))
            .moving(Transition::Moves(vec![event], last_error))
            .ending_attempt(state.as_str())
            .report(Report::Now(Progress::Finished {
                state,
                summary: summary.into(),
            }));
        self.commit(change).await?;
        Ok(DriveOutcome::Finished {
            state,
            summary: summary.into(),
        })
    }
}
