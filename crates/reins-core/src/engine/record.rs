//! Recording a step: what the agent is told, what the checkpoint remembers, and the row, events and
//! checkpoint of a step that ran no effect (read-only, invalid, denied, refused, or failed before
//! its intent), committed together.

use crate::agent::Observation;
use crate::event::{self as ev, Actor};
use crate::checkpoint::{Level, ToolRecord};
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::Result;
use crate::policy::Verdict;
use crate::step::{one_line, StepKind, StepStatus};
use crate::store::audit;
use crate::store::steps::StepRow;
use crate::action::RecordedCall;
use crate::store::write::Write;

use super::commit::{Change, Report};
use super::drive::Drive;

/// One tool step's record, before it is written.
pub(super) struct StepRecord<'s> {
    pub(super) seq: i64,
    pub(super) tool: &'s str,
    pub(super) action: &'s RecordedCall,
    pub(super) action_hash: &'s str,
    pub(super) why: Option<&'s str>,
    pub(super) verdict: Option<&'s Verdict>,
    pub(super) preview: Option<&'s str>,
    /// The step was parked for review: its row is replaced by what happens now.
    pub(super) reopen: bool,
    /// The approval this step carries out.
    pub(super) approval: Option<&'s str>,
}

impl StepRecord<'_> {
    /// The step's row with `status` (and `result` once it has one).
    pub(super) fn row(&self, status: StepStatus, result: Option<&str>, now: i64) -> StepRow {
        StepRow {
            seq: self.seq,
            kind: StepKind::ToolCall,
            tool: self.tool.into(),
            action: self.action.clone(),
            action_hash: self.action_hash.into(),
            why: self.why.map(str::to_owned),
            status,
            risk: self.verdict.map(|v| v.risk),
            reasons: self.verdict.map(|v| v.reasons.clone()),
            preview: self.preview.map(str::to_owned),
            result: result.map(str::to_owned),
            started_at: now,
            ended_at: result.map(|_| now),
        }
    }

    /// The rows that (re)place this step: a step parked for review is replaced.
    pub(super) fn rows(&self, status: StepStatus, result: Option<&str>, now: i64) -> Vec<Write> {
        let mut rows = Vec::with_capacity(2);
        if self.reopen {
            rows.push(Write::StepReopened(self.seq));
        }
        rows.push(Write::Step(Box::new(self.row(status, result, now))));
        rows
    }
}

impl Drive<'_> {
    /// Records a step that ran no effect, with its checkpoint, in one change.
    pub(super) async fn record(
        &mut self,
        rec: &StepRecord<'_>,
        status: StepStatus,
        ok: bool,
        result: &str,
    ) -> Result<()> {
        self.record_with_summary(rec, status, ok, result, result)
            .await
    }

    pub(super) async fn record_with_summary(
        &mut self,
        rec: &StepRecord<'_>,
        status: StepStatus,
        ok: bool,
        result: &str,
        summary: &str,
    ) -> Result<()> {
        self.observe(rec.seq, rec.tool, ok, result, Some(&rec.action.call().args))
            .await?;
        self.complete(rec.seq, rec.tool, rec.action_hash, status, result, summary);
        let checkpoint = self.checkpoint(
            Level::Step,
            format!("step {} {} {status}", rec.seq, rec.tool),
        )?;
        let now = now_ms();
        let change = Change::rows(rec.rows(status, Some(result), now))
            .checkpoint(checkpoint)
            .events(self.decided(rec))
            .event(audit::Event::new(
                Actor::Agent,
                Some(self.run),
                ev::StepFinished {
                    step: rec.seq,
                    tool: rec.tool.into(),
                    status,
                    action_hash: rec.action_hash.into(),
                    verdict: rec.verdict.cloned(),
                    approval: rec.approval.map(str::to_owned),
                },
            ))
            .report(Report::Step {
                seq: rec.seq,
                tool: rec.tool.into(),
                status,
                why: rec.why.map(str::to_owned),
                summary: one_line(summary),
                reused: false,
            });
        self.commit(change).await?;
        Ok(())
    }

    /// The step is done: the checkpoint remembers it (only the recent ones, so its size and the
    /// time to verify it do not grow with the run; the journal holds every step).
    pub(super) fn complete(
        &mut self,
        seq: i64,
        tool: &str,
        action_hash: &str,
        status: StepStatus,
        result: &str,
        summary: &str,
    ) {
        self.cp.completed.push(ToolRecord {
            seq,
            tool: tool.into(),
            action_hash: action_hash.into(),
            status: status.as_str().into(),
            result_sha256: Digest::of(result.as_bytes()),
            summary: one_line(summary),
        });
        let excess = self
            .cp
            .completed
            .len()
            .saturating_sub(crate::checkpoint::RECENT_STEPS);
        self.cp.completed.drain(..excess);
        self.cp.next_step = seq + 1;
        self.cp.current_step = None;
    }

    /// Tells the agent what a step returned. A large output is first stored whole in the blob store
    /// (fsynced, content-addressed) so the agent can refer to it instead of carrying it; not one
    /// holding a secret, which is kept only in the journal, sealed there (the blob store is not).
    pub(super) async fn observe(
        &mut self,
        seq: i64,
        tool: &str,
        ok: bool,
        output: &str,
        ran: Option<&serde_json::Value>,
    ) -> Result<()> {
        let artifact = if crate::agent::has_artifact(output) {
            Some(self.e.blobs.put(output.as_bytes()).await?)
        } else {
            None
        };
        self.agent.observe(&Observation {
            seq,
            tool: tool.into(),
            ok,
            output: output.into(),
            ran: ran.cloned(),
            artifact,
        });
        Ok(())
    }

    /// The policy's decision on a step, for the audit log, when the step got that far.
    pub(super) fn decided(&self, rec: &StepRecord<'_>) -> Option<audit::Event> {
        rec.verdict.map(|v| {
            audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::PolicyDecided {
                    step: rec.seq,
                    tool: rec.tool.into(),
                    action_hash: rec.action_hash.into(),
                    risk: v.risk,
                    decision: v.decision,
                    reasons: v.reasons.clone(),
                    policy: self.e.policy.version(),
                },
            )
        })
    }
}
