//! Several cards approved at once, bound to what the person saw: each card by the action hash it
//! showed. The whole set is checked first (still pending, still that action, its files still as
//! previewed, not high risk), then decided in one transaction; if any card moved meanwhile (it
//! changed, it was decided elsewhere, it expired), none is approved, and the answer names each
//! card that moved.

use crate::action::Action;
use crate::approval::Scope;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::policy::Risk;
use crate::store::{runs, StoreError};

use super::commit::Change;
use super::decision::{approved, check_seen, Decided};
use super::Engine;

/// The most cards one batch decides.
pub const MAX_BATCH: usize = 100;

/// One card of a batch: its id and the action hash it showed.
#[derive(Clone, Debug)]
pub struct Shown {
    pub id: String,
    pub action_hash: String,
}

impl Engine {
    /// Approves exactly `cards`, once each, as `by`, or none of them.
    pub async fn approve_batch(
        &self,
        cards: &[Shown],
        by: &str,
        note: Option<&str>,
    ) -> Result<Vec<Decided>> {
        if cards.is_empty() {
            return Err(Error::Invalid("no card to approve".into()));
        }
        if cards.len() > MAX_BATCH {
            return Err(Error::Invalid(format!(
                "{} cards: approve at most {MAX_BATCH} at once",
                cards.len()
            )));
        }
        let mut moved: Vec<String> = Vec::new();
        let mut changes: Vec<(RunId, Change)> = Vec::new();
        let mut rows = Vec::new();
        let n = cards.len();
        for card in cards {
            if card.action_hash.len() < 8 {
                return Err(Error::Invalid(format!(
                    "card {}: give the action hash it showed (at least 8 characters), so the approval is bound to what you saw",
                    card.id
                )));
            }
            let row = match self.pending(&card.id).await {
                Ok(row) => row,
                Err(e) => {
                    moved.push(format!("{}: {e}", card.id));
                    continue;
                }
            };
            if rows.iter().any(|r: &crate::store::approvals::ApprovalRow| r.id == row.id) {
                return Err(Error::Invalid(format!("card {} is named twice", row.id)));
            }
            if let Err(e) = check_seen(&row, Some(&card.action_hash)) {
                moved.push(format!("{}: {e}", row.id));
                continue;
            }
            if row.risk == Risk::High {
                return Err(Error::Invalid(format!(
                    "card {} is high risk: high-risk actions are decided one at a time",
                    row.id
                )));
            }
            let run = runs::get(self.store.pool(), row.run_id).await?;
            let ws = Self::workspace_of(&run)?;
            if let Some(new) = self.refresh_with(&row, &ws).await? {
                moved.push(format!(
                    "{}: its files changed on disk since it was shown; review approval {new} instead",
                    row.id
                ));
                continue;
            }
            let opened = self.opened(&row.action, "the approved action").await?;
            if let Err(e) = Action::parse(opened.call(), &ws) {
                moved.push(format!("{}: the recorded action no longer validates ({e})", row.id));
                continue;
            }
            let said = match note {
                Some(text) => format!("{text} (one of {n} approved together)"),
                None => format!("one of {n} approved together"),
            };
            changes.push((
                row.run_id,
                approved(&row, by, Some(said), Scope::Once, None, Vec::new())
                    .moving(crate::store::write::Transition::Decided),
            ));
            rows.push(row);
        }
        if !moved.is_empty() {
            return Err(Error::Conflict(format!(
                "none of the {n} cards was approved: {} moved since you saw {}: {}",
                moved.len(),
                if moved.len() == 1 { "it" } else { "them" },
                moved.join("; ")
            )));
        }
        let applied = match self.commit_all(changes).await {
            Ok(a) => a,
            // A card decided elsewhere between the check and the write: the transaction wrote
            // nothing.
            Err(Error::Store(StoreError::Conflict(why))) => {
                return Err(Error::Conflict(format!(
                    "none of the {n} cards was approved: {why}"
                )))
            }
            Err(e) => return Err(e),
        };
        let mut out = Vec::with_capacity(rows.len());
        for (row, applied) in rows.iter().zip(&applied) {
            out.push(self.read_decided(row, applied, None).await?);
        }
        Ok(out)
    }
}
