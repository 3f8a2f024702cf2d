//! Budgets that pause: at each safe point a run with a budget compares what it has spent (the
//! store's record: model calls, what its agent reported, its attempts' time, its steps) with its
//! limits. At a limit it pauses there, its checkpoint verified, and waits for a person to allow
//! more or stop it. Nothing is killed and nothing is lost by waiting.

use crate::budget::{Budget, Measure, Reached, Spent};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::event::{self as ev, Actor};
use crate::ids::RunId;
use crate::run::RunState;
use crate::store::write::Write;
use crate::store::{audit, budgets, runs};

use super::commit::Change;
use super::control::Control;
use super::drive::Drive;
use super::{DriveOutcome, Engine, ResumeMode, Silent};

/// A run's budget as its card and its detail show it.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct BudgetView {
    pub limits: Budget,
    pub spent: Spent,
    /// The limit it reached, if any.
    pub reached: Option<Reached>,
    /// It is paused at that limit, waiting for a person to allow more or stop it.
    pub waiting: bool,
}

/// How the reason of a run paused at its budget begins (alerts tell such a run apart by it).
pub const AT_BUDGET: &str = "budget reached: ";

impl BudgetView {
    /// The limit the run waits at, if it is paused at one.
    pub fn at_limit(&self) -> Option<Reached> {
        self.reached.filter(|_| self.waiting)
    }
}

/// What a paused run's card says and offers.
pub fn waiting_reason(run: RunId, reached: &Reached) -> String {
    format!(
        "{AT_BUDGET}{}; allow more (`reins budget allow {run} {}`) or stop here (`reins budget stop {run}`)",
        reached.sentence(),
        suggested(reached)
    )
}

/// "allow N more" as the card offers it, as `reins budget allow` takes it: as much again as the
/// limit was.
pub fn suggested(reached: &Reached) -> String {
    let n = reached.limit;
    match reached.measure {
        Measure::Tokens => format!("tokens={}", n.ceil() as u64),
        Measure::Cost => format!("cost={n:.2}"),
        Measure::Wall => format!("wall={}m", (n / 60.0).ceil().max(1.0) as u64),
        Measure::Steps => format!("steps={}", n.ceil() as u64),
    }
}

impl Drive<'_> {
    /// At a safe point: a run that reached a limit of its budget pauses here.
    pub(super) async fn within_budget(&mut self) -> Result<Option<DriveOutcome>> {
        let pool = self.e.store.pool();
        let Some(budget) = budgets::get(pool, self.run).await? else {
            return Ok(None);
        };
        let spent = budgets::spent(pool, self.run, now_ms()).await?;
        let Some(reached) = budget.reached(&spent) else {
            return Ok(None);
        };
        let run = self.run;
        let reason = waiting_reason(run, &reached);
        self.pause_verified(reason, move |checkpoint, _| {
            vec![audit::Event::new(
                Actor::Harness,
                Some(run),
                ev::BudgetReached {
                    reached,
                    spent,
                    checkpoint,
                },
            )]
        })
        .await
        .map(Some)
    }
}

impl Engine {
    /// A run's budget, what it spent, and whether it waits at a limit.
    pub async fn budget(&self, id: RunId) -> Result<BudgetView> {
        Ok(self.budget_and_state(id).await?.0)
    }

    async fn budget_and_state(&self, id: RunId) -> Result<(BudgetView, RunState)> {
        let state = runs::get(self.store.pool(), id).await?.state;
        let limits = budgets::get(self.store.pool(), id)
            .await?
            .unwrap_or_default();
        let spent = budgets::spent(self.store.pool(), id, now_ms()).await?;
        let reached = limits.reached(&spent);
        let view = BudgetView {
            limits,
            spent,
            reached,
            waiting: reached.is_some() && state == RunState::Paused,
        };
        Ok((view, state))
    }

    /// Allows run `id` `more` of `measure` beyond what it spent (or its limit, if higher). A run
    /// paused at its budget goes on: it is queued for a worker.
    pub async fn allow_more(
        &self,
        id: RunId,
        measure: Measure,
        more: f64,
        by: &str,
    ) -> Result<(BudgetView, Option<Control>)> {
        let (before, state) = self.budget_and_state(id).await?;
        if state.is_terminal() {
            return Err(Error::Conflict(format!(
                "run {id} is {state}; its budget no longer matters"
            )));
        }
        let limits = before
            .limits
            .raised(measure, more, &before.spent)
            .map_err(Error::Invalid)?;
        let to = limits.limit(measure).unwrap_or(more);
        let change = Change::rows(vec![Write::Budget(limits)]).event(audit::Event::new(
            Actor::User,
            Some(id),
            ev::BudgetRaised {
                measure,
                from: before.limits.limit(measure),
                to,
                by: by.into(),
            },
        ));
        self.commit(Some(id), change, None, &Silent).await?;
        let after = self.budget(id).await?;
        let resumed = if before.waiting && after.reached.is_none() {
            Some(self.resume(id, ResumeMode::Continue).await?)
        } else {
            None
        };
        Ok((after, resumed))
    }

    /// Ends a run paused at its budget where it is: cancelled, with what it spent as the reason.
    pub async fn stop_at_budget(&self, id: RunId, by: &str) -> Result<Control> {
        let Some(reached) = self.budget(id).await?.at_limit() else {
            return Err(Error::Conflict(format!(
                "run {id} is not paused at its budget; `reins cancel {id}` ends it anyway"
            )));
        };
        let reason = format!("stopped at its budget by {by}: {}", reached.sentence());
        self.cancel(id, Some(&reason)).await
    }

    /// Why run `id` cannot simply be resumed: it is paused at its budget, which still holds.
    pub async fn held_by_budget(&self, id: RunId) -> Result<Option<String>> {
        let view = self.budget(id).await?;
        Ok(view.at_limit().map(|r| waiting_reason(id, &r)))
    }
}
