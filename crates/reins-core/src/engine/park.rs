//! Step 4: the review checkpoint. The step, the approval (pending, with the exact action, its hash,
//! risk, reasons, preview and context summary), the review checkpoint and the move to
//! `awaiting_approval` commit together; then the run waits durably — the app may close or crash.

use crate::approval::context::Journal;
use crate::approval::{ContextSummary, OnTimeout, Status};
use crate::event::{self as ev, Actor};
use crate::checkpoint::Level;
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::ids::ApprovalId;
use crate::policy::{Risk, Verdict};
use crate::run::{RunEvent, RunState};
use crate::step::StepStatus;
use crate::store::approvals::ApprovalRow;
use crate::store::write::{Transition, Write};
use crate::store::{audit, manifests, steps, StoreError};
use crate::tools::EffectPlan;

use super::commit::Change;
use super::drive::{Drive, Stop};
use super::record::StepRecord;
use super::DriveOutcome;

impl Drive<'_> {
    /// What the journal says of the run before step `seq`, for a review card's context summary:
    /// its last steps only when the agent keeps no working memory to say them.
    async fn journal_before(&self, seq: i64, recent: bool) -> Result<Journal> {
        let pool = self.e.store.pool();
        let recent = if recent {
            steps::recent(pool, self.run, seq, 5)
                .await?
                .into_iter()
                .map(|s| {
                    let result: String = s.summary_line().chars().take(120).collect();
                    format!("step {} {} {}: {result}", s.seq, s.tool, s.status)
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(Journal {
            steps_done: steps::tool_steps_done_before(pool, self.run, seq).await?,
            recent,
            reads: steps::reads_before(pool, self.run, seq, 200).await?,
            facts_used: manifests::latest_facts_used(pool, self.run).await?,
        })
    }

    /// How long this step's card may wait, and what it becomes then: the policy's review timeout
    /// and `on_timeout` (the rule's, else the policy's default); or less, and denied, when the agent
    /// says so (a headless session started with a review deadline stops waiting at it).
    fn review_timeout(&mut self, verdict: Option<&Verdict>) -> (i64, OnTimeout) {
        let policy = self.e.policy.review_timeout_ms();
        let then = verdict
            .and_then(|v| v.on_timeout)
            .unwrap_or_else(|| self.e.policy.on_timeout());
        let agent = self.agent.external().and_then(|x| x.review_deadline());
        match agent.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)) {
            Some(ms) if ms < policy => (ms, OnTimeout::Deny),
            Some(_) | None => (policy, then),
        }
    }

    /// Parks the step for review. `supersedes` names an approval this one replaces, and why.
    pub(super) async fn park(
        &mut self,
        rec: &StepRecord<'_>,
        plan: Option<&EffectPlan>,
        supersedes: Option<(&str, &str)>,
    ) -> Result<DriveOutcome> {
        self.park_staged(rec, plan, supersedes, None).await
    }

    /// [`Self::park`] for a staged command: the card keeps what approving applies.
    pub(super) async fn park_staged(
        &mut self,
        rec: &StepRecord<'_>,
        plan: Option<&EffectPlan>,
        supersedes: Option<(&str, &str)>,
        staged: Option<crate::stage::effect::StagedEffect>,
    ) -> Result<DriveOutcome> {
        let verdict = rec.verdict;
        // Anything the policy did not judge is high risk.
        let risk = verdict.map_or(Risk::High, |v| v.risk);
        let reasons: Vec<String> = verdict.map(|v| v.reasons.clone()).unwrap_or_default();
        let preview = rec.preview.unwrap_or("").to_owned();
        let working = self.agent.conversation().and_then(|c| c.working_memory());
        let journal = self.journal_before(rec.seq, working.is_none()).await?;
        let context = ContextSummary::new(&self.cp.goal, rec.why, working.as_ref(), journal);
        let now = now_ms();
        let (timeout, on_timeout) = self.review_timeout(verdict);
        let id = ApprovalId::new().to_string();
        let row = ApprovalRow {
            id: id.clone(),
            run_id: self.run,
            step_seq: rec.seq,
            tool: rec.tool.into(),
            action: rec.action.clone(),
            action_hash: rec.action_hash.into(),
            risk,
            reasons: reasons.clone(),
            segments: verdict
                .filter(|v| !v.segments.is_empty())
                .map(|v| v.segments.clone()),
            preview_sha256: Digest::of(preview.as_bytes()).to_string(),
            preview,
            pre_images: plan.map(|p| p.pre.clone()).unwrap_or_default(),
            context: context.clone(),
            policy: self.e.policy.version(),
            status: Status::Pending,
            created_at: now,
            expires_at: now + timeout,
            decided_at: None,
            decided_by: None,
            note: None,
            scope: None,
            edited_action: None,
            edited_hash: None,
            edited_preview: None,
            edited_risk: None,
            edited_reasons: None,
            superseded_by: None,
            stale_reason: None,
            on_timeout,
            paused_at: None,
            siblings_rejected: 0,
            staged,
        };
        self.cp.current_step = Some(rec.seq);
        let checkpoint = self.checkpoint(
            Level::Review,
            format!("step {} {} awaits review", rec.seq, rec.tool),
        )?;
        let requested = audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::ApprovalRequested {
                approval: id.clone(),
                step: rec.seq,
                tool: rec.tool.into(),
                action_hash: rec.action_hash.into(),
                risk,
                reasons: reasons.clone(),
                preview_sha256: row.preview_sha256.clone(),
                context,
                policy: row.policy.clone(),
                expires_at: row.expires_at,
                on_timeout: Some(row.on_timeout),
                staged: row.staged.as_ref().map(|s| s.said()),
            },
        );
        let mut change = Change::rows(rec.rows(StepStatus::AwaitingReview, None, now));
        change.rows.push(Write::Approval(Box::new(row)));
        change.events.extend(self.decided(rec));
        if let Some((old, why)) = supersedes {
            change.rows.push(Write::ApprovalSuperseded {
                id: old.into(),
                by: id.clone(),
                why: why.into(),
            });
            change.events.push(audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::Superseded {
                    approval: old.into(),
                    by: id.clone(),
                    why: why.into(),
                },
            ));
        }
        change.events.push(requested);
        let joined = reasons.join("; ");
        let message = format!(
            "step {} ({}) needs a review [{} risk]: {joined}. `reins approval show {id}`",
            rec.seq,
            rec.tool,
            risk.as_str(),
        );
        self.stop(
            change.checkpoint(checkpoint),
            awaiting_approval(joined, message),
        )
        .await
    }

    /// Still pending (the run was paused and resumed meanwhile): wait for the decision again. If a
    /// person decided it meanwhile, the run is not parked (None), and the decision is carried out.
    pub(super) async fn wait_again(&mut self, row: &ApprovalRow) -> Result<Option<DriveOutcome>> {
        let message = format!(
            "step {} ({}) still needs a review. `reins approval show {}`",
            row.step_seq, row.tool, &row.id
        );
        let change = Change::rows(vec![Write::ApprovalStillPending(row.id.clone())]).event(
            audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::ApprovalWaiting {
                    approval: row.id.clone(),
                    step: row.step_seq,
                },
            ),
        );
        match self
            .stop(change, awaiting_approval(message.clone(), message))
            .await
        {
            Ok(outcome) => Ok(Some(outcome)),
            Err(Error::Store(StoreError::Conflict(_))) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn awaiting_approval(reason: String, message: String) -> Stop {
    Stop {
        transition: Transition::Moves(vec![RunEvent::AwaitApproval], Some(reason)),
        state: RunState::AwaitingApproval,
        message,
        attempt: "awaiting approval".into(),
    }
}
