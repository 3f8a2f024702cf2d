//! Budgets through the door: what a run may spend and has spent, "allow N more" and "stop here"
//! on a run paused at its budget, and the default budget new runs get.

use super::Reins;
use crate::budget::{Budget, Measure};
use crate::engine::{BudgetView, Control};
use crate::error::Result;
use crate::ids::RunId;

impl Reins {
    /// Run `id`'s budget, what it has spent, and whether it waits at a limit.
    pub async fn budget(&self, id: RunId) -> Result<BudgetView> {
        self.engine.budget(id).await
    }

    /// Allows run `id` `more` of `measure`, decided by `by`; a run paused at its budget goes on.
    /// Returns the budget as it stands now, and the resume if there was one.
    pub async fn allow_more(
        &self,
        id: RunId,
        measure: Measure,
        more: f64,
        by: &str,
    ) -> Result<(BudgetView, Option<Control>)> {
        self.engine.allow_more(id, measure, more, by).await
    }

    /// "Stop here": ends a run paused at its budget (cancelled, with what it spent as the reason).
    pub async fn stop_at_budget(&self, id: RunId, by: &str) -> Result<Control> {
        self.engine.stop_at_budget(id, by).await
    }

    /// The budget new runs get from the Settings (empty: none; `[budget]` in `policy.toml` still
    /// applies).
    pub async fn default_budget(&self) -> Result<Budget> {
        self.settings().default_budget().await
    }

    /// Sets the Settings' default budget (an empty one removes it); audited.
    pub async fn set_default_budget(&self, new: &Budget) -> Result<Budget> {
        self.settings().set_default_budget(new).await
    }

    /// The budget `[budget]` in `policy.toml` gives new runs.
    pub fn policy_budget(&self) -> Budget {
        self.engine.policy().budget()
    }
}
