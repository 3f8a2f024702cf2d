//! Requests from agents that run outside Reins (Claude Code, through its hooks). Such a run has no
//! worker driving it: it waits `attached` until a request arrives. The asker writes its request as
//! a row of the run (`store::requests`) and drives the run itself when nobody else does; the drive
//! hands the row to the agent as its next move, the step protocol decides it (deny, allow, or a
//! review card), and the run goes back to waiting. A card's decision is carried out by whoever
//! drives the run next — the asker that waits for it, or a worker — and the asker reads the
//! outcome from the step, woken by the store's change notifications. It answers before its own
//! deadline; a card still undecided then is expired, so nobody approves a call the agent has
//! already been refused.

use serde_json::Value;

use crate::agent::{Answer, Asked, NewRun, Outside};
use crate::approval::Status;
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::event::{self as ev, Actor};
use crate::ids::RunId;
use crate::run::RunState;
use crate::step::StepStatus;
use crate::store::write::{Transition, Write};
use crate::store::{approvals, audit, requests, runs, steps, StoreError};
use crate::workspace::Workspace;

use super::commit::Change;
use super::{DriveOutcome, Engine, Silent};

/// How long a waiting asker sleeps at most between looks when no commit woke it: any process's
/// commit wakes it (see `store::wake`), so this only bounds a wake-up that was missed.
const LOOK: std::time::Duration = std::time::Duration::from_secs(1);
/// How long after its deadline an asker still waits for an expired card's step to be recorded.
const GRACE_MS: i64 = 3_000;
/// How long a record (what a tool did) or a session's end may wait for a busy run.
const RECORD_DEADLINE_MS: i64 = 5_000;

/// What one outside request came to.
#[derive(Debug)]
pub struct OutsideOutcome {
    /// The session's run; None when there was nothing for Reins, or no run was still open.
    pub run: Option<RunId>,
    /// The answer to a tool call; None for a record.
    pub answer: Option<Answer>,
}

/// What an asker waits on.
#[derive(Clone, Debug)]
enum Waiting {
    /// Its request row, until a drive takes it.
    Request(String),
    /// The step deciding it.
    Step(i64),
    /// Nothing: it was not taken up as a decision.
    Refused,
}

impl Engine {
    /// Answers one request of an agent running outside Reins, waiting for a person until
    /// `deadline` (Unix ms) at most.
    pub async fn outside(&self, o: Outside, deadline: i64) -> Result<OutsideOutcome> {
        let Outside {
            session,
            workspace,
            asked,
        } = o;
        let asked = match asked {
            Asked::Nothing => {
                return Ok(OutsideOutcome {
                    run: None,
                    answer: None,
                })
            }
            Asked::End { request } => {
                let run = self.end_session(&session, request).await?;
                return Ok(OutsideOutcome { run, answer: None });
            }
            other => other,
        };
        let ws = Workspace::open(&workspace)
            .map_err(|e| Error::Invalid(format!("the session's folder cannot be opened: {e}")))?;
        // A session Claude Code drives itself has no budget: nothing of it runs on Reins' clock.
        let run = self
            .session_run(&session, &ws, crate::budget::Budget::default())
            .await?;
        let answer = match asked {
            Asked::Decide {
                request,
                args,
                same,
                wait,
                carried,
            } => {
                let carried = match carried {
                    Some(seq) => self.offered_call(run, seq).await?.filter(|a| same(a, &args)),
                    None => None,
                };
                if carried.is_some() {
                    Some(Answer::Ask {
                        reason: "the card a person decided in Reins answers this call".into(),
                    })
                } else {
                    // The same call asked again (the agent started again on the session, or
                    // retrying) is answered by the card it already has.
                    let waiting = match self.unanswered_call(run).await? {
                        Some((seq, a)) if same(&a, &args) => Waiting::Step(seq),
                        _ if wait => self.ask(run, request).await?,
                        _ => Waiting::Request(self.request(run, request).await?),
                    };
                    Some(self.decide(run, waiting, deadline, wait).await?)
                }
            }
            Asked::Record { request } => {
                let id = self.request(run, request).await?;
                self.carried_out(run, &id, now_ms() + RECORD_DEADLINE_MS)
                    .await?;
                None
            }
            Asked::End { .. } | Asked::Nothing => None,
        };
        Ok(OutsideOutcome {
            run: Some(run),
            answer,
        })
    }

    /// Tells run `id`'s agent `body` as a request from outside (what a resumed session hears next).
    pub async fn tell(&self, id: RunId, body: Value) -> Result<()> {
        self.request(id, body).await.map(|_| ())
    }

    /// Why run `id`'s agent cannot be driven here now: its session runs in another process.
    pub async fn held_elsewhere_run(&self, id: RunId) -> Result<Option<String>> {
        let row = runs::get(self.store.pool(), id).await?;
        Ok(self.held_elsewhere(&row).await)
    }

    /// Asks run `run` `body`: when nobody drives the run, by driving it at once with the request
    /// in hand; otherwise by writing it as a row for whoever drives it. What to wait on.
    async fn ask(&self, run: RunId, body: Value) -> Result<Waiting> {
        let state = runs::get(self.store.pool(), run).await?.state;
        if state == RunState::Attached {
            match self.drive_carrying(run, &Silent, Some(body.clone())).await? {
                (_, Some(Some(seq))) => return Ok(Waiting::Step(seq)),
                (_, Some(None)) => return Ok(Waiting::Refused),
                // Not claimed (someone moved first): the request is written as a row.
                (DriveOutcome::Skipped { .. }, None) => {}
                // Claimed, but the drive stopped before it took the request up.
                (_, None) => return Ok(Waiting::Refused),
            }
        }
        Ok(Waiting::Request(self.request(run, body).await?))
    }

    /// Writes `body` as a request of run `run`: its id.
    async fn request(&self, run: RunId, body: Value) -> Result<String> {
        let id = crate::ids::IntentId::new().to_string();
        let body = serde_json::to_string(&body).map_err(|e| Error::Invalid(e.to_string()))?;
        let write = Write::Request {
            id: id.clone(),
            body,
        };
        self.commit(Some(run), Change::rows(vec![write]), None, &Silent)
            .await?;
        Ok(id)
    }

    /// Waits until `waiting` is decided, or `deadline`: the answer for the agent. A card
    /// undecided at the deadline is expired and the call denied. With `wait` false, a card is not
    /// waited for: the answer is [`Answer::Ask`] as soon as it is in the inbox.
    async fn decide(
        &self,
        id: RunId,
        mut waiting: Waiting,
        deadline: i64,
        wait: bool,
    ) -> Result<Answer> {
        let pool = self.store.pool();
        let mut changes = None;
        let mut expired = false;
        loop {
            let now = now_ms();
            if let Waiting::Request(request) = &waiting {
                match requests::get(pool, request).await? {
                    Some(r) if r.taken_at.is_some() => match r.step_seq {
                        Some(seq) => waiting = Waiting::Step(seq),
                        None => {
                            return Ok(Answer::Deny {
                                reason: "Reins could not take this call up as a decision".into(),
                            })
                        }
                    },
                    Some(_) => {}
                    None => {
                        return Ok(Answer::Deny {
                            reason: "the request was withdrawn before anyone took it up".into(),
                        })
                    }
                }
            }
            match &waiting {
                Waiting::Refused => {
                    return Ok(Answer::Deny {
                        reason: "Reins could not take this call up as a decision".into(),
                    })
                }
                Waiting::Step(seq) => {
                    let seq = *seq;
                    if let Some(step) = steps::get(pool, id, seq).await? {
                        if let Some(answer) = self.answer_of(id, &step).await? {
                            return Ok(answer);
                        }
                        if !wait && self.card_pending(id, seq).await? {
                            return Ok(Answer::Ask {
                                reason: format!(
                                    "Reins asks a person: step {seq} of run {id} waits in the inbox"
                                ),
                            });
                        }
                    }
                    if now >= deadline && !expired {
                        expired = true;
                        self.expire_step(id, seq, "the agent's hook stopped waiting for a decision")
                            .await?;
                    }
                    if now >= deadline + GRACE_MS {
                        return Ok(Answer::Deny {
                            reason: "Reins had no decision on this call before the hook's deadline"
                                .into(),
                        });
                    }
                }
                Waiting::Request(request) => {
                    let state = runs::get(pool, id).await?.state;
                    let refused = match state {
                        RunState::Cancelled => Some(format!(
                            "this session's run ({id}) was cancelled in Reins: it takes no more tool calls"
                        )),
                        RunState::Paused | RunState::Suspended => Some(format!(
                            "this session's run ({id}) is {state} in Reins: `reins resume {id}` lets its tool calls through again"
                        )),
                        _ if now >= deadline => Some(format!(
                            "Reins could not take this call up before the hook's deadline: the session's run stayed {state}"
                        )),
                        _ => None,
                    };
                    if let Some(reason) = refused {
                        match self.withdraw(id, request).await {
                            Ok(()) => return Ok(Answer::Deny { reason }),
                            // Taken meanwhile: its step decides it after all.
                            Err(Error::Store(StoreError::Conflict(_))) => continue,
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
            // An asker that does not wait for people (a session Reins runs itself) leaves the
            // drive to the process running the agent: it only looks.
            if !wait || !self.drive_if_free(id).await? {
                self.await_commit(&mut changes).await;
            }
        }
    }

    /// Drives run `id` when nobody else does (waiting for its agent, or queued after a decision);
    /// whether the drive got somewhere worth looking at again at once.
    async fn drive_if_free(&self, id: RunId) -> Result<bool> {
        let state = runs::get(self.store.pool(), id).await?.state;
        if !matches!(
            state,
            RunState::Attached | RunState::Queued | RunState::Running | RunState::PauseRequested
        ) {
            return Ok(false);
        }
        Ok(matches!(
            self.drive(id, &Silent).await?,
            DriveOutcome::NeedsHuman { .. } | DriveOutcome::Finished { .. }
        ))
    }

    /// Waits, until `deadline`, for request `request` to be taken (recorded); a request nobody
    /// took by then stays for the run's next drive.
    async fn carried_out(&self, id: RunId, request: &str, deadline: i64) -> Result<()> {
        let mut changes = None;
        loop {
            let taken = requests::get(self.store.pool(), request)
                .await?
                .is_none_or(|r| r.taken_at.is_some());
            if taken || now_ms() >= deadline {
                return Ok(());
            }
            if runs::get(self.store.pool(), id).await?.state.is_terminal() {
                return Ok(());
            }
            if !self.drive_if_free(id).await? {
                self.await_commit(&mut changes).await;
            }
        }
    }

    /// Waits for the next commit (any process's), or [`LOOK`]. The first time it only starts
    /// listening, and the caller looks again at once: what committed before it listened is seen.
    async fn await_commit(&self, changes: &mut Option<crate::store::wake::Waiter>) {
        match changes {
            Some(w) => {
                w.wait(LOOK).await;
            }
            None => *changes = Some(self.store.waiter()),
        }
    }

    /// Withdraws request `request` nobody took; `Conflict` when it was taken meanwhile.
    async fn withdraw(&self, id: RunId, request: &str) -> Result<()> {
        let change = Change::rows(vec![Write::RequestWithdrawn(request.to_owned())]);
        self.commit(Some(id), change, None, &Silent).await.map(|_| ())
    }

    /// Ends the run of the session `session` names, which its agent says has ended (`request`:
    /// the end as the agent takes it). A card still waiting in the inbox is expired — nobody is
    /// left to carry its call out — and the run finishes. None when the session has no run still
    /// open (it never asked anything, or its run already ended); a paused or suspended run is left
    /// as the person left it.
    async fn end_session(&self, session: &NewRun, request: Value) -> Result<Option<RunId>> {
        let Some(row) =
            runs::latest_named(self.store.pool(), session.kind, &session.name).await?
        else {
            return Ok(None);
        };
        if row.state.is_terminal() || matches!(row.state, RunState::Paused | RunState::Suspended)
        {
            return Ok(None);
        }
        if let Some((seq, _)) = self.unanswered_call(row.id).await? {
            self.expire_step(row.id, seq, "the agent's session ended before a decision")
                .await?;
        }
        let id = self.request(row.id, request).await?;
        self.carried_out(row.id, &id, now_ms() + RECORD_DEADLINE_MS)
            .await?;
        let ended = runs::get(self.store.pool(), row.id).await?.state.is_terminal();
        Ok(ended.then_some(row.id))
    }

    /// The last step of run `id` when it is a permission whose decision is not carried out yet (a
    /// card still pending, or approved with nobody to carry it out): its seq and its call's
    /// arguments. An agent that asks for the same call again is answered by it.
    pub async fn unanswered_call(&self, id: RunId) -> Result<Option<(i64, Value)>> {
        let pool = self.store.pool();
        let seq = steps::max_seq(pool, id).await?;
        let Some(step) = steps::get(pool, id, seq).await? else {
            return Ok(None);
        };
        if step.tool != crate::action::permission::TOOL
            || !matches!(step.status, StepStatus::AwaitingReview | StepStatus::Running)
        {
            return Ok(None);
        }
        Ok(Some((seq, step.action.call().args.clone())))
    }

    /// The arguments of the permission step `seq` of run `id` decided, if it is one.
    pub async fn offered_call(&self, id: RunId, seq: i64) -> Result<Option<Value>> {
        let step = steps::get(self.store.pool(), id, seq).await?;
        Ok(step
            .filter(|s| s.tool == crate::action::permission::TOOL)
            .map(|s| s.action.call().args.clone()))
    }

    /// The answer a decided step gives; None while it is undecided.
    async fn answer_of(&self, id: RunId, step: &steps::StepRow) -> Result<Option<Answer>> {
        let result = step.result.clone().unwrap_or_default();
        let approval = approvals::latest_for_step(self.store.pool(), id, step.seq).await?;
        Ok(Some(match step.status {
            StepStatus::Done => {
                let input = approval
                    .as_ref()
                    .and_then(|a| a.edited_action.as_ref())
                    .map(|e| e.call().args["rawInput"].clone());
                let reason = match &approval {
                    Some(a) if input.is_some() => {
                        format!("approved in Reins as edited by {}", by(a))
                    }
                    Some(a) => format!("approved in Reins by {}", by(a)),
                    None => "allowed by Reins' policy".into(),
                };
                Answer::Allow { reason, input }
            }
            StepStatus::Denied => Answer::Deny {
                reason: format!(
                    "denied by Reins' policy: {}",
                    step.reasons.clone().unwrap_or_default().join("; ")
                ),
            },
            StepStatus::Rejected => Answer::Deny {
                reason: match approval.as_ref().and_then(|a| a.note.clone()) {
                    Some(note) => format!("rejected in Reins: {note}"),
                    None => "rejected in Reins".into(),
                },
            },
            StepStatus::Expired => Answer::Deny {
                reason: "no decision in Reins in time".into(),
            },
            StepStatus::Invalid | StepStatus::Failed | StepStatus::Skipped => Answer::Deny {
                reason: format!("Reins refused the call: {result}"),
            },
            StepStatus::Running
            | StepStatus::AwaitingReview
            | StepStatus::Unknown
            | StepStatus::AwaitingInput
            | StepStatus::Answered => return Ok(None),
        }))
    }

    /// Whether step `seq` of run `id` waits on a card nobody has decided.
    async fn card_pending(&self, id: RunId, seq: i64) -> Result<bool> {
        let card = approvals::latest_for_step(self.store.pool(), id, seq).await?;
        Ok(card.is_some_and(|c| c.status == Status::Pending))
    }

    /// Expires the pending card of step `seq`, if one is pending: nobody waits for it any more
    /// (`why`).
    async fn expire_step(&self, id: RunId, seq: i64, why: &str) -> Result<()> {
        let Some(row) = approvals::latest_for_step(self.store.pool(), id, seq).await? else {
            return Ok(());
        };
        if row.status != Status::Pending {
            return Ok(());
        }
        let change = Change::rows(vec![Write::ApprovalDecided {
            id: row.id.clone(),
            status: Status::Expired,
            by: "system".into(),
            note: Some(why.into()),
            scope: None,
            edited: None,
        }])
        .event(audit::Event::new(
            Actor::System,
            Some(id),
            ev::Expired {
                approval: row.id.clone(),
                step: seq,
                expires_at: now_ms(),
            },
        ))
        .moving(Transition::Decided);
        match self.commit(Some(id), change, None, &Silent).await {
            Ok(_) | Err(Error::Store(StoreError::Conflict(_))) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn by(a: &approvals::ApprovalRow) -> String {
    a.decided_by.clone().unwrap_or_else(|| "a person".into())
}
