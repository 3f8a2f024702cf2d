//! The worker's side of a review checkpoint (DESIGN §3 steps 4–6): parking a step with its approval,
//! and — when the run is claimed again — carrying out the decision: the approved action (or the
//! person's edit) runs only if its hash and the files' pre-images still match what was reviewed;
//! otherwise it is reviewed again. A rejection or expiry goes back to the agent as the step's result.

use crate::approval::{ContextSummary, Status};
use crate::audit::event as ev;
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::Result;
use crate::ids::ApprovalId;
use crate::journal::FileImage;
use crate::policy::{Decision, Risk};
use crate::run::{RunEvent, RunState};
use crate::store::approvals::{self, ApprovalRow};
use crate::store::grants::GrantRow;
use crate::store::{attempts, audit, audit::Actor, grants, runs, steps, StoreError};
use crate::tools::{Action, EffectPlan, ToolCall};

use super::drive::Drive;
use super::step::{denied, step_row, StepRecord};
use super::{DriveOutcome, Progress};
use crate::step::StepStatus;

impl Drive<'_> {
    /// Step 4: the policy asked for a human. The step, the approval (pending, with the exact action,
    /// its hash, risk, reasons, preview and context summary), the review checkpoint and the state
    /// change commit together. `supersedes` names an approval this one replaces, and why.
    pub(super) async fn park(
        &mut self,
        rec: &StepRecord<'_>,
        plan: Option<&EffectPlan>,
        supersedes: Option<(&str, &str)>,
    ) -> Result<DriveOutcome> {
        let verdict = rec.verdict;
        let risk = verdict.map(|v| v.risk).unwrap_or(Risk::High);
        let reasons: Vec<String> = verdict.map(|v| v.reasons.clone()).unwrap_or_default();
        let preview = rec.preview.unwrap_or("").to_owned();
        let working = self.agent.working_memory();
        let context = ContextSummary::build(
            self.e.store.pool(),
            self.run,
            &self.cp.goal,
            rec.seq,
            rec.why,
            working.as_ref(),
        )
        .await?;
        let now = now_ms();
        let id = ApprovalId::new().to_string();
        let row = ApprovalRow {
            id: id.clone(),
            run_id: self.run,
            step_seq: rec.seq,
            tool: rec.tool.into(),
            action: rec.action.into(),
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
            expires_at: now + self.e.policy.review_timeout_ms(),
            decided_at: None,
            decided_by: None,
            note: None,
            scope: None,
            edited_action: None,
            edited_hash: None,
            edited_preview: None,
            superseded_by: None,
            stale_reason: None,
        };
        self.cp.current_step = Some(rec.seq);
        self.stamp(format!("step {} {} awaits review", rec.seq, rec.tool));
        let prepared = self.e.prepare(&self.cp, crate::checkpoint::Level::Review)?;
        let joined = reasons.join("; ");
        let mut tx = self.begin().await?;
        if rec.reopen {
            steps::reopen(&mut tx, self.run, rec.seq).await?;
        }
        steps::insert(
            &mut tx,
            self.run,
            &step_row(rec, StepStatus::AwaitingReview, None, now),
        )
        .await?;
        approvals::insert(&mut tx, &row).await?;
        let mut events: Vec<audit::Event> = self.decided(rec).into_iter().collect();
        if let Some((old, why)) = supersedes {
            approvals::supersede(&mut tx, old, &id, why, now).await?;
            events.push(audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::Superseded {
                    approval: old.into(),
                    by: id.clone(),
                    why: why.into(),
                },
            ));
        }
        events.push(audit::Event::new(
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
                context: context.clone(),
                policy: row.policy.clone(),
                expires_at: row.expires_at,
            },
        ));
        self.e
            .insert_checkpoint(
                &mut tx,
                self.run,
                &prepared,
                now,
                events,
                Some(self.owner()),
            )
            .await?;
        let reason = format!(
            "step {} ({}) needs a review [{} risk]: {joined}. `reins approval show {id}`",
            rec.seq,
            rec.tool,
            risk.as_str(),
        );
        self.hand_over(tx, &joined, reason, now).await
    }

    /// Ends the attempt with the run waiting for a review decision, in the caller's transaction.
    async fn hand_over(
        &mut self,
        mut tx: crate::store::Tx,
        why: &str,
        message: String,
        now: i64,
    ) -> Result<DriveOutcome> {
        runs::advance(
            &mut tx,
            self.run,
            Some(self.fence),
            RunEvent::AwaitApproval,
            Some(why),
            now,
        )
        .await?;
        attempts::end_open(&mut tx, self.run, "awaiting approval", now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        self.obs.on(&Progress::Waiting {
            state: RunState::AwaitingApproval,
            reason: message.clone(),
        });
        Ok(DriveOutcome::NeedsHuman {
            state: RunState::AwaitingApproval,
            reason: message,
        })
    }

    /// The run resumed at a step parked for review: carry out its decision.
    pub(super) async fn continue_review(&mut self, seq: i64) -> Result<Option<DriveOutcome>> {
        // At most twice: a decision taken while this worker was about to wait is carried out.
        for _ in 0..2 {
            let pool = self.e.store.pool();
            let Some(row) = approvals::latest_for_step(pool, self.run, seq).await? else {
                return self
                    .suspend(&format!(
                        "step {seq} was parked for review but no review is recorded"
                    ))
                    .await
                    .map(Some);
            };
            let step = steps::get(pool, self.run, seq).await?;
            // Carried out before a crash and settled from the journal since: its recorded result is
            // reused; the action never runs a second time.
            if let Some(done) = step
                .clone()
                .filter(|s| s.status != StepStatus::AwaitingReview)
            {
                let call: ToolCall = serde_json::from_str(&done.action).map_err(|e| {
                    StoreError::Invalid(format!("step {seq}: recorded action: {e}"))
                })?;
                let hash = done.action_hash.clone();
                return self.reuse(done, &call, &hash).await;
            }
            let why = step.and_then(|s| s.why);
            return match row.status {
                Status::Pending => match self.wait_again(&row).await? {
                    Some(outcome) => Ok(Some(outcome)),
                    None => continue,
                },
                Status::Approved => self.carry_out(&row, why.as_deref()).await,
                Status::Rejected | Status::Expired => {
                    self.refused(&row, why.as_deref()).await.map(|_| None)
                }
                Status::Superseded => self
                    .suspend(&format!(
                        "step {seq}: its latest review is superseded; nothing to carry out"
                    ))
                    .await
                    .map(Some),
            };
        }
        self.suspend(&format!(
            "step {seq}: its review keeps changing; look at it with `reins approvals --run {}`",
            self.run
        ))
        .await
        .map(Some)
    }

    /// Still pending (the run was paused and resumed meanwhile): wait for the decision again. The
    /// approval is read again inside the transaction: if a person decided it meanwhile, the run is
    /// not parked (None), and the decision is carried out instead.
    async fn wait_again(&mut self, row: &ApprovalRow) -> Result<Option<DriveOutcome>> {
        let now = now_ms();
        let reason = format!(
            "step {} ({}) still needs a review. `reins approval show {}`",
            row.step_seq, row.tool, &row.id
        );
        let mut tx = self.begin().await?;
        let current = approvals::get(&mut *tx, &row.id).await?;
        if current.is_none_or(|c| c.status != Status::Pending) {
            return Ok(None);
        }
        // The audit append proves ownership, so it comes before the state leaves `running`.
        audit::append_all(
            &mut tx,
            Some(self.owner()),
            &[audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::ApprovalWaiting {
                    approval: row.id.clone(),
                    step: row.step_seq,
                },
            )],
            now,
        )
        .await?;
        self.hand_over(tx, &reason, reason.clone(), now)
            .await
            .map(Some)
    }

    /// Step 6, bind: the approved action runs only if it is exactly what was approved and the files
    /// are as they were when the diff was shown.
    async fn carry_out(
        &mut self,
        row: &ApprovalRow,
        why: Option<&str>,
    ) -> Result<Option<DriveOutcome>> {
        let seq = row.step_seq;
        let (text, approved_hash) = row.effective_action();
        let call: Option<ToolCall> = serde_json::from_str(text).ok();
        let parsed = call.as_ref().map(|c| Action::parse(c, &self.ws));
        let action = match parsed {
            Some(Ok(a)) => a,
            Some(Err(e)) => {
                let rec = bare(row, text, approved_hash, why);
                return self
                    .record(&rec, StepStatus::Invalid, false, &format!("the approved action no longer validates: {e}"))
                    .await
                    .map(|_| None);
            }
            None => {
                return self
                    .suspend(&format!("step {seq}: the approved action cannot be read back; review it again with `reins approval show {}`", &row.id))
                    .await
                    .map(Some)
            }
        };
        let hash = action.hash();
        let stale = if hash.as_str() != approved_hash {
            Some(format!(
                "the action changed after it was approved (approved {}, now {}); it must be reviewed again",
                &approved_hash[..12.min(approved_hash.len())],
                hash.short()
            ))
        } else {
            None
        };
        let resolved = match crate::tools::fetch::addresses_of(&action).await {
            Ok(r) => r,
            Err(e) => {
                let text = action.canonical_text();
                let rec = bare(row, &text, hash.as_str(), why);
                return self
                    .record(&rec, StepStatus::Failed, false, &e)
                    .await
                    .map(|_| None);
            }
        };
        let verdict = self.classify(&action, &resolved);
        let plan = match crate::tools::plan_files(&action, &self.ws).map_err(|e| e.to_string()) {
            // The agent is told when what ran is a person's edit of what it proposed.
            Ok(p) if row.edited_action.is_some() => p.map(|mut p| {
                p.summary = format!(
                    "{} (a reviewer edited your proposed action; this is what ran)",
                    p.summary
                );
                p
            }),
            Ok(p) => p,
            Err(e) => {
                let text = action.canonical_text();
                let rec = bare(row, &text, hash.as_str(), why);
                return self
                    .record(&rec, StepStatus::Failed, false, &e)
                    .await
                    .map(|_| None);
            }
        };
        let reviewed_pre = &row.pre_images;
        let stale = stale.or_else(|| {
            let now_pre: &[FileImage] = plan.as_ref().map(|p| p.pre.as_slice()).unwrap_or(&[]);
            (now_pre != reviewed_pre.as_slice()).then(|| {
                let changed: Vec<&str> = now_pre
                    .iter()
                    .filter(|i| !reviewed_pre.contains(i))
                    .map(|i| i.path.as_str())
                    .collect();
                format!(
                    "{} changed on disk after the review was prepared; the diff you approved no longer matches",
                    if changed.is_empty() { "a file".to_owned() } else { changed.join(", ") }
                )
            })
        });
        let preview =
            crate::approval::preview::of(&action, plan.as_ref(), &verdict, &resolved, self.place());
        let text = action.canonical_text();
        let rec = StepRecord {
            seq,
            tool: action.tool(),
            action: &text,
            action_hash: hash.as_str(),
            why,
            verdict: Some(&verdict),
            preview: Some(&preview),
            reopen: true,
            approval: Some(&row.id),
        };
        if let Some(why_stale) = stale {
            return self
                .park(&rec, plan.as_ref(), Some((&row.id, &why_stale)))
                .await
                .map(Some);
        }
        if verdict.decision == Decision::Deny {
            return self
                .record(&rec, StepStatus::Denied, false, &denied(&verdict))
                .await
                .map(|_| None);
        }
        self.execute(&rec, &action, plan, &resolved).await
    }

    /// A rejection or expiry: the agent hears the reason as the step's result; nothing ran.
    async fn refused(&mut self, row: &ApprovalRow, why: Option<&str>) -> Result<()> {
        let result = if row.status == Status::Rejected {
            format!(
                "rejected by the reviewer: {}",
                row.note.as_deref().unwrap_or("(no reason given)")
            )
        } else {
            "the review expired without a decision, so the action did not run".to_owned()
        };
        let rec = bare(row, &row.action, &row.action_hash, why);
        let status = if row.status == Status::Rejected {
            StepStatus::Rejected
        } else {
            StepStatus::Expired
        };
        self.record(&rec, status, false, &result).await
    }

    /// A live grant covering an action the policy would ask about, if any.
    pub(super) async fn grant_for(&self, action: &Action, risk: Risk) -> Result<Option<GrantRow>> {
        let live = grants::live_for(
            self.e.store.pool(),
            action.tool(),
            self.run,
            &self.ws.root().to_string_lossy(),
        )
        .await?;
        Ok(live
            .into_iter()
            .find(|g| crate::approval::grant::covers(g, action, risk, self.place())))
    }

    /// Counts a grant's use, audited, before the action it allows runs.
    pub(super) async fn use_grant(
        &mut self,
        grant: &GrantRow,
        seq: i64,
        action_hash: &str,
    ) -> Result<()> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        grants::used(&mut tx, &grant.id, now).await?;
        audit::append_all(
            &mut tx,
            Some(self.owner()),
            &[audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::GrantUsed {
                    grant: grant.id.clone(),
                    scope: grant.scope,
                    matcher: grant.matcher,
                    step: seq,
                    action_hash: action_hash.into(),
                },
            )],
            now,
        )
        .await?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(())
    }
}

/// A record for a reviewed step that did not run.
fn bare<'s>(
    row: &'s ApprovalRow,
    action: &'s str,
    hash: &'s str,
    why: Option<&'s str>,
) -> StepRecord<'s> {
    StepRecord {
        seq: row.step_seq,
        tool: &row.tool,
        action,
        action_hash: hash,
        why,
        verdict: None,
        preview: Some(&row.preview),
        reopen: true,
        approval: Some(&row.id),
    }
}
