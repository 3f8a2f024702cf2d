//! A review nobody decided by its deadline times out, as its rule says (`on_timeout`): it pauses —
//! stays open with no deadline, the run waiting for it, holding nothing, and goes on once it is
//! decided — or it expires and its action is refused (fails closed). The audit log says which.

use crate::approval::{OnTimeout, Status};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::event::{self as ev, Actor};
use crate::store::approvals::{self, ApprovalRow};
use crate::store::write::{Transition, Write};
use crate::store::{audit, StoreError};

use super::commit::Change;
use super::{Engine, Silent};

impl Engine {
    /// Times out every pending review past its deadline.
    pub async fn expire_due(&self) -> Result<()> {
        for row in approvals::pending_due(self.store.pool(), now_ms()).await? {
            match self.time_out(row).await {
                // Paused, or expired as its rule says; or decided meanwhile: nothing to time out.
                Ok(_) | Err(Error::Expired(_) | Error::Store(StoreError::Conflict(_))) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Times out one overdue review: paused, it is returned as now stored (still open); expired,
    /// the answer is `Expired`.
    pub(super) async fn time_out(&self, row: ApprovalRow) -> Result<ApprovalRow> {
        match row.on_timeout {
            OnTimeout::Pause => {
                let change = Change::rows(vec![Write::ApprovalPaused(row.id.clone())]).event(
                    audit::Event::new(
                        Actor::System,
                        Some(row.run_id),
                        ev::TimedOut {
                            approval: row.id.clone(),
                            step: row.step_seq,
                            expires_at: row.expires_at,
                        },
                    ),
                );
                self.commit(Some(row.run_id), change, None, &Silent).await?;
                approvals::get(self.store.pool(), &row.id)
                    .await?
                    .ok_or_else(|| Error::Conflict(format!("approval {} vanished", row.id)))
            }
            OnTimeout::Deny => {
                let change = Change::rows(vec![Write::ApprovalDecided {
                    id: row.id.clone(),
                    status: Status::Expired,
                    by: "system".into(),
                    note: Some("no decision before the review timeout".into()),
                    scope: None,
                    edited: None,
                }])
                .event(audit::Event::new(
                    Actor::System,
                    Some(row.run_id),
                    ev::Expired {
                        approval: row.id.clone(),
                        step: row.step_seq,
                        expires_at: row.expires_at,
                    },
                ))
                .moving(Transition::Decided);
                self.commit(Some(row.run_id), change, None, &Silent).await?;
                Err(Error::Expired(format!(
                    "approval {} expired before the decision; the action did not run",
                    row.id
                )))
            }
        }
    }
}
