//! Step 6, bind: when a run parked for review is claimed again, its decision is carried out. The
//! approved action (or the person's edit) runs only if its hash and the files' pre-images still
//! match what was reviewed — otherwise it is reviewed again — and only if the policy does not deny
//! it now. A rejection or an expiry goes back to the agent as the step's result.

use crate::approval::Status;
use crate::error::Result;
use crate::step::StepStatus;
use crate::store::approvals::{self, ApprovalRow};
use crate::store::steps;
use crate::action::{Action, RecordedCall};

use super::decide::{self, Bound};
use super::drive::Drive;
use super::record::StepRecord;
use super::DriveOutcome;

/// What the agent hears of a refused review, and the status the step gets.
pub(super) fn refusal(row: &ApprovalRow) -> (StepStatus, String) {
    if row.status == Status::Rejected {
        (
            StepStatus::Rejected,
            format!(
                "rejected by the reviewer: {}",
                row.note.as_deref().unwrap_or("(no reason given)")
            ),
        )
    } else {
        (
            StepStatus::Expired,
            "the review expired without a decision, so the action did not run".to_owned(),
        )
    }
}

impl Drive<'_> {
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
                let call = done.action.call().clone();
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
                    let (status, result) = refusal(&row);
                    if row.siblings_rejected > 0 {
                        // Checkpointed with this step: the queued calls are never proposed.
                        if let Some(c) = self.agent.conversation() {
                            c.reject_queued(row.note.as_deref().unwrap_or("(no reason given)"));
                        }
                    }
                    let rec = bare(&row, &row.action, &row.action_hash, why.as_deref());
                    self.record(&rec, status, false, &result)
                        .await
                        .map(|_| None)
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

    /// The approved action runs only if it is exactly what was approved and the files are as they
    /// were when the diff was shown.
    async fn carry_out(
        &mut self,
        row: &ApprovalRow,
        why: Option<&str>,
    ) -> Result<Option<DriveOutcome>> {
        let seq = row.step_seq;
        let (approved, approved_hash) = row.effective_action();
        let approved = &self.e.opened(approved, &format!("step {seq}'s action")).await?;
        let action = match Action::parse(approved.call(), &self.ws) {
            Ok(a) => a,
            Err(e) => {
                let rec = bare(row, approved, approved_hash, why);
                let result = format!("the approved action no longer validates: {e}");
                return self
                    .record(&rec, StepStatus::Invalid, false, &result)
                    .await
                    .map(|_| None);
            }
        };
        let hash = action.hash();
        let text = RecordedCall::of(&action);
        let resolved = match crate::tools::fetch::addresses_of(&action).await {
            Ok(r) => r,
            Err(e) => {
                let rec = bare(row, &text, hash.as_str(), why);
                return self
                    .record(&rec, StepStatus::Failed, false, &e)
                    .await
                    .map(|_| None);
            }
        };
        let verdict = self.e.policy.classify(
            &action,
            &crate::policy::Context {
                root: self.ws.root(),
                resolved: &resolved,
            },
        );
        // A staged command approved as shown: its result lands as files; it does not run.
        let staged = match (&action, &row.staged, &row.edited_action) {
            (Action::Shell(_), Some(effect), None) => Some(effect),
            _ => None,
        };
        let planned = match staged {
            Some(effect) => self.staged_plan(effect, false).await.map(Some),
            None => crate::tools::plan_files(&action, &self.ws).map_err(Into::into),
        };
        let plan = match planned {
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
                let rec = bare(row, &text, hash.as_str(), why);
                return self
                    .record(&rec, StepStatus::Failed, false, &e.to_string())
                    .await
                    .map(|_| None);
            }
        };
        let now_pre = plan.as_ref().map(|p| p.pre.as_slice()).unwrap_or(&[]);
        // A staged result is bound to the files it still lands (the person may have left some out).
        let reviewed: Vec<_> = match staged {
            Some(effect) => row
                .pre_images
                .iter()
                .filter(|i| effect.files.iter().any(|f| f.path == i.path))
                .cloned()
                .collect(),
            None => row.pre_images.clone(),
        };
        let bound = decide::bind(
            approved_hash,
            &hash,
            &reviewed,
            now_pre,
            row.approved_verdict(),
            &verdict,
        );
        // The mode is part of what was reviewed (F15): a file made executable since is new.
        let seen_mode = crate::tools::mode_line(row.edited_preview.as_deref().unwrap_or(&row.preview));
        let mode_now = plan.as_ref().and_then(|p| crate::tools::mode_line(&p.preview));
        let bound = match bound {
            Bound::Run if seen_mode != mode_now => Bound::Stale(format!(
                "the file's mode changed after the review ({}); it must be reviewed again",
                mode_now.unwrap_or("no longer executable")
            )),
            other => other,
        };
        let preview =
            crate::approval::preview::of(&action, plan.as_ref(), &verdict, &resolved, self.place());
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
        match bound {
            // Files a staged result would land moved since: staged again, on a new card.
            Bound::Stale(why_stale) if staged.is_some() => match &action {
                Action::Shell(cmd) => self
                    .park_command(&rec, cmd, Some((&row.id, &why_stale)))
                    .await
                    .map(Some),
                _ => self
                    .park(&rec, None, Some((&row.id, &why_stale)))
                    .await
                    .map(Some),
            },
            Bound::Stale(why_stale) => self
                .park(&rec, plan.as_ref(), Some((&row.id, &why_stale)))
                .await
                .map(Some),
            Bound::Denied(result) => self
                .record(&rec, StepStatus::Denied, false, &result)
                .await
                .map(|_| None),
            Bound::Run => self.execute(&rec, &action, plan, &resolved).await,
        }
    }
}

/// A record for a reviewed step that did not run.
fn bare<'s>(
    row: &'s ApprovalRow,
    action: &'s RecordedCall,
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
