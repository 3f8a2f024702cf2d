//! Resolving an effect whose outcome nobody could know (after a crash, or a part-way failure): a
//! person says it happened, that it should run again, or that it should be skipped. Never decided
//! automatically; the run goes on once nothing is left undecided.

use serde::Serialize;

use crate::event::{self as ev, Actor};
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::journal::{IntentStatus, Resolution};
use crate::step::StepStatus;
use crate::store::write::{Transition, Write};
use crate::store::{audit, runs, StoreError};

use super::commit::Change;
use super::{Engine, Silent};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    pub intent: String,
    pub run: RunId,
    pub step: i64,
    pub tool: String,
    pub resolution: Resolution,
    /// The run was waiting only on this decision and is queued again.
    pub resumed: bool,
    pub message: String,
}

impl Engine {
    /// Records a person's decision on an unsettled intent (unknown, or pending on a run no worker
    /// drives), and resumes the run when nothing else is left undecided.
    pub async fn resolve(
        &self,
        intent_prefix: &str,
        resolution: Resolution,
        note: Option<&str>,
    ) -> Result<Resolved> {
        let prefix = intent_prefix.trim().to_ascii_lowercase();
        if prefix.len() < 4 {
            return Err(Error::Invalid(format!(
                "{intent_prefix:?} is not an intent id (give at least its first 4 characters; `reins show RUN` lists them)"
            )));
        }
        let found = crate::store::intents::find(self.store.pool(), &prefix).await?;
        let (run, intent) = match found.as_slice() {
            [one] => one.clone(),
            [] => {
                return Err(StoreError::NotFound {
                    what: format!("intent {intent_prefix}"),
                }
                .into())
            }
            many => {
                return Err(Error::Invalid(format!(
                    "{intent_prefix:?} matches {} intents; give more characters",
                    many.len()
                )))
            }
        };
        let row = runs::get(self.store.pool(), run).await?;
        if !matches!(intent.status, IntentStatus::Unknown | IntentStatus::Pending) {
            return Err(Error::Conflict(format!(
                "intent {} (step {} {}) is already {}; nothing to decide",
                intent.id, intent.step_seq, intent.tool, intent.status
            )));
        }
        if row.state.is_active() || row.state.is_terminal() {
            return Err(Error::Conflict(format!(
                "run {run} is {}; an effect is decided while its run waits (suspended or paused)",
                row.state
            )));
        }
        let who = match note {
            Some(n) => format!("a person: {n}"),
            None => "a person".to_owned(),
        };
        let row_write = match resolution {
            Resolution::Done => Write::SettleByPerson {
                seq: intent.step_seq,
                status: IntentStatus::Confirmed,
                step_status: StepStatus::Done,
                result: intent
                    .result
                    .clone()
                    .unwrap_or_else(|| format!("{} done", intent.tool)),
                settled_by: format!("marked done by {who}"),
            },
            Resolution::Skip => {
                let result = format!(
                    "skipped by {who}: the effect's outcome was unknown and it was not run again"
                );
                Write::SettleByPerson {
                    seq: intent.step_seq,
                    status: IntentStatus::Skipped,
                    step_status: StepStatus::Skipped,
                    result: result.clone(),
                    settled_by: result,
                }
            }
            Resolution::Retry => Write::ForgetForRetry(intent.step_seq),
        };
        let change = Change::rows(vec![row_write])
            .event(audit::Event::new(
                Actor::User,
                Some(run),
                ev::IntentResolved {
                    intent: intent.id.clone(),
                    step: intent.step_seq,
                    tool: intent.tool.clone(),
                    action_hash: intent.action_hash.clone(),
                    previous_status: intent.status,
                    resolution,
                    note: note.map(str::to_owned),
                    pre: intent.pre_images.clone(),
                    post: intent.post_images.clone(),
                },
            ))
            // A suspended run waiting only on this decision is queued again.
            .moving(Transition::ResumeWhenSettled)
            .announcing(Box::new(move |applied| {
                applied
                    .moved
                    .filter(|m| m.from != m.to)
                    .map(|m| {
                        audit::Event::new(
                            Actor::User,
                            Some(run),
                            ev::ResumedAfterResolve {
                                from: m.from,
                                to: m.to,
                                after: "intent.resolved".into(),
                            },
                        )
                    })
                    .into_iter()
                    .collect()
            }));
        let applied = self.commit(Some(run), change, None, &Silent).await?;
        let resume = applied.moved.is_some_and(|m| m.from != m.to);
        let others = crate::store::intents::unsettled(self.store.pool(), run)
            .await?
            .len();
        let what = match resolution {
            Resolution::Done => "marked done; the agent gets its recorded result",
            Resolution::Retry => "will run again when the run resumes",
            Resolution::Skip => "skipped; the agent is told it did not run",
        };
        let tail = if resume {
            format!("; run {run} is queued again")
        } else if others > 0 {
            format!("; {others} more effect(s) of run {run} still need a decision")
        } else {
            format!("; `reins resume {run}` continues the run")
        };
        Ok(Resolved {
            intent: intent.id.clone(),
            run,
            step: intent.step_seq,
            tool: intent.tool.clone(),
            resolution,
            resumed: resume,
            message: format!("step {} ({}) {what}{tail}", intent.step_seq, intent.tool),
        })
    }
}
