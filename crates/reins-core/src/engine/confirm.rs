//! Step 9: confirm. The effect's outcome — it happened (with the post-images), or it failed and the
//! disk proves it did not — commits with the step, the checkpoint and the audit event. When nobody
//! can say what happened, the intent is marked unknown and the run waits for a person: never
//! guessed, never re-run.

use crate::event::{self as ev, Actor};
use crate::checkpoint::Level;
use crate::error::Result;
use crate::ids::IntentId;
use crate::journal::{FileImage, IntentStatus, Settlement};
use crate::run::{RunEvent, RunState};
use crate::step::{one_line, StepStatus};
use crate::store::audit;
use crate::store::write::{Transition, Write};
use crate::tools::{ApplyError, EffectPlan};

use super::commit::{Change, Report};
use super::drive::{Drive, Stop};
use super::DriveOutcome;

/// An effect whose intent is being settled.
pub(super) struct EffectRecord<'s> {
    pub(super) intent: IntentId,
    pub(super) seq: i64,
    pub(super) tool: &'s str,
    pub(super) action_hash: &'s str,
    pub(super) why: Option<&'s str>,
    pub(super) post: &'s [FileImage],
    /// The call's arguments as it ran.
    pub(super) ran: Option<&'s serde_json::Value>,
    /// How its process ran confined, for the audit log.
    pub(super) contained: Option<ev::Contained>,
    /// Reins wrote its files itself (`post` is what they hold now): if its confirmation were
    /// lost, recovery would settle the intent from the disk, so the confirmation need not be
    /// durable on its own and rides with the next durable commit.
    pub(super) from_disk: bool,
}

impl Drive<'_> {
    /// Records how an effect settled — `Ok(summary)` it happened, `Err(error)` it failed and the
    /// disk shows it did not happen — with the step, the checkpoint and the audit events, in one
    /// change. The agent is told first, so the checkpoint holds its state after hearing it.
    pub(super) async fn settle_effect(
        &mut self,
        e: EffectRecord<'_>,
        outcome: Result<&str, &str>,
    ) -> Result<()> {
        let (ok, text) = match outcome {
            Ok(summary) => (true, summary),
            Err(error) => (false, error),
        };
        self.observe(e.seq, e.tool, ok, text, e.ran).await?;
        let (intent_status, step_status, kind) = if ok {
            for img in e.post {
                self.cp.files.insert(img.path.clone(), img.sha256.clone());
            }
            let kind = ev::Kind::from(ev::IntentConfirmed {
                intent: e.intent.to_string(),
                step: e.seq,
                post: e.post.to_vec(),
            });
            (IntentStatus::Confirmed, StepStatus::Done, kind)
        } else {
            let kind = ev::Kind::from(ev::IntentFailed {
                intent: e.intent.to_string(),
                step: e.seq,
                error: text.into(),
            });
            (IntentStatus::BusinessFailed, StepStatus::Failed, kind)
        };
        self.complete(e.seq, e.tool, e.action_hash, step_status, text, text);
        let checkpoint = self.checkpoint(
            Level::Step,
            format!("step {} {} {step_status}", e.seq, e.tool),
        )?;
        let change = Change::rows(vec![Write::Settle {
            seq: e.seq,
            status: intent_status,
            step_status,
            result: text.into(),
            settled_by: None,
            ends_processes: true,
        }]);
        let change = if ok && e.from_disk {
            change.riding()
        } else {
            change
        };
        let change = change
        .checkpoint(checkpoint)
        .events(
            e.contained
                .map(|c| audit::Event::new(Actor::Harness, Some(self.run), c)),
        )
        .event(audit::Event::new(Actor::Harness, Some(self.run), kind))
        .report(Report::Step {
            seq: e.seq,
            tool: e.tool.into(),
            status: step_status,
            why: e.why.map(str::to_owned),
            summary: one_line(text),
            reused: false,
        });
        self.commit_or_hold(change).await
    }

    /// The effect returned an error. If the disk shows it did not happen, that is an ordinary failure
    /// the agent hears about; otherwise nobody can say what happened, and a human decides.
    pub(super) async fn effect_failed(
        &mut self,
        e: EffectRecord<'_>,
        plan: &EffectPlan,
        failure: &ApplyError,
    ) -> Result<Option<DriveOutcome>> {
        let error = &failure.to_string();
        if failure.untouched {
            self.settle_effect(e, Err(error)).await?;
            return Ok(None);
        }
        let paths: Vec<_> = plan
            .pre
            .iter()
            .filter_map(|i| self.ws.resolve(&i.path).ok())
            .collect();
        let untouched = self
            .ws
            .hashes(paths.iter())
            .map(|now| crate::journal::settle_files(&plan.pre, &plan.pre, &now) == Settlement::Done)
            .unwrap_or(false);
        if !untouched {
            let why = format!(
                "the effect failed part-way and the files match neither before nor after: {error}"
            );
            return self
                .outcome_unknown(e.intent, e.seq, e.tool, &why)
                .await
                .map(Some);
        }
        self.settle_effect(e, Err(error)).await?;
        Ok(None)
    }

    /// Nobody can say whether an effect happened: the intent and its step are marked unknown, and
    /// the run waits for a human, in one change.
    pub(super) async fn outcome_unknown(
        &mut self,
        intent: IntentId,
        seq: i64,
        tool: &str,
        why: &str,
    ) -> Result<DriveOutcome> {
        let reason = format!(
            "step {seq} ({tool}): outcome unknown: {why}. Decide with `reins resolve {intent} --done | --retry | --skip`"
        );
        let change = Change::rows(vec![Write::Settle {
            seq,
            status: IntentStatus::Unknown,
            step_status: StepStatus::Unknown,
            result: why.into(),
            settled_by: Some(why.into()),
            ends_processes: false,
        }])
        .event(audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::OutcomeUnknown {
                intent: intent.to_string(),
                step: seq,
                tool: tool.into(),
                why: why.into(),
            },
        ))
        .event(audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::Reason {
                reason: reason.clone(),
            },
        ));
        let stop = Stop {
            transition: Transition::Moves(vec![RunEvent::Suspend], Some(reason.clone())),
            state: RunState::Suspended,
            message: reason.clone(),
            attempt: format!("suspended: {reason}"),
        };
        self.stop(change, stop).await
    }
}
