//! A run's budget from the app: allow more or stop a run paused at its limit, and the default
//! budget new runs get (Settings).

use reins_core::api::{Budget, BudgetMeasure, BudgetView, Control};
use tauri::State;

use super::approvals::reviewer;
use super::changing;
use crate::args;
use crate::error::Result;
use crate::state::AppState;

/// "Allow N more" of `measure` (tokens, dollars, seconds or steps); a run paused at its budget
/// goes on.
#[tauri::command]
#[specta::specta]
pub async fn allow_more(
    state: State<'_, AppState>,
    id: String,
    measure: BudgetMeasure,
    more: f64,
) -> Result<BudgetView> {
    let id = args::run_id(&id)?;
    changing(&state, |r| async move {
        r.allow_more(id, measure, more, &reviewer())
            .await
            .map(|(v, _)| v)
    })
    .await
}

/// "Stop here": ends a run paused at its budget.
#[tauri::command]
#[specta::specta]
pub async fn stop_at_budget(state: State<'_, AppState>, id: String) -> Result<Control> {
    let id = args::run_id(&id)?;
    changing(&state, |r| async move {
        r.stop_at_budget(id, &reviewer()).await
    })
    .await
}

/// The default budget: the Settings' own, and what `[budget]` in policy.toml fills in.
#[derive(Clone, Debug, serde::Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct DefaultBudget {
    pub settings: Budget,
    pub policy: Budget,
}

#[tauri::command]
#[specta::specta]
pub async fn default_budget(state: State<'_, AppState>) -> Result<DefaultBudget> {
    Ok(DefaultBudget {
        settings: state.reins.default_budget().await?,
        policy: state.reins.policy_budget(),
    })
}

/// Sets the Settings' default budget (no limits: none); audited.
#[tauri::command]
#[specta::specta]
pub async fn set_default_budget(
    state: State<'_, AppState>,
    budget: Budget,
) -> Result<DefaultBudget> {
    let settings = changing(
        &state,
        |r| async move { r.set_default_budget(&budget).await },
    )
    .await?;
    Ok(DefaultBudget {
        settings,
        policy: state.reins.policy_budget(),
    })
}
