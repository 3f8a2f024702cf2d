//! The setup most stories about reviews share: a facade under the built-in rules, a plan started in
//! the sandbox and driven until it stops for its review, and that one pending review.

use reins_core::api::{
    ApprovalStatus, ApprovalView, ApproveRequest, DriveOutcome, Reins, RunId, RunState, Scope,
    Silent,
};

use crate::{plan, Sandbox};

impl Sandbox {
    /// The facade under the built-in rules: no rules of the user's.
    pub async fn with_defaults(&self) -> anyhow::Result<Reins> {
        self.reins_with_rules("# the built-in defaults\n").await
    }

    /// Starts the plan `text` (TOML) on this sandbox's workspace.
    pub async fn start(&self, reins: &Reins, text: &str) -> anyhow::Result<RunId> {
        Ok(reins.create_run(&plan(text)?, &self.ws(), &Silent).await?)
    }

    /// Starts the plan `text` and drives it until it waits for a person: the run and its review.
    pub async fn to_review(
        &self,
        reins: &Reins,
        text: &str,
    ) -> anyhow::Result<(RunId, ApprovalView)> {
        let run = self.start(reins, text).await?;
        let outcome = reins.drive(run, &Silent).await?;
        anyhow::ensure!(
            waiting(&outcome),
            "the run did not stop for review: {outcome:?}"
        );
        Ok((run, pending(reins, run).await?))
    }
}

/// The one review waiting in `run`; an error when there is none or more than one.
pub async fn pending(reins: &Reins, run: RunId) -> anyhow::Result<ApprovalView> {
    let rows = reins
        .approvals(Some(ApprovalStatus::Pending), Some(run))
        .await?;
    anyhow::ensure!(
        rows.len() == 1,
        "expected one pending approval, got {rows:?}"
    );
    rows.into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("none"))
}

/// Approves exactly this action, once, as `user:test`.
pub fn approve_once() -> ApproveRequest {
    ApproveRequest {
        scope: Scope::Once,
        pattern: None,
        edited: None,
        note: None,
        expect_hash: None,
        by: "user:test".into(),
        leave_out: Vec::new(),
    }
}

pub fn succeeded(outcome: &DriveOutcome) -> bool {
    matches!(
        outcome,
        DriveOutcome::Finished {
            state: RunState::Succeeded,
            ..
        }
    )
}

pub fn waiting(outcome: &DriveOutcome) -> bool {
    matches!(
        outcome,
        DriveOutcome::NeedsHuman {
            state: RunState::AwaitingApproval,
            ..
        }
    )
}
