use reins_core::api::{
    AcpRunRequest, AgentView, ContextView, LlmRunRequest, McpServerView, RunDetail,
};
use reins_core::api::{Control, ResumeMode, RollbackReport};
use reins_core::api::{RunSummary, Silent, UsageView};
use tauri::State;

use super::changing;
use crate::args::{self, StartAcp, StartLlm};
use crate::error::{IpcError, Result};
use crate::state::AppState;

#[tauri::command]
#[specta::specta]
pub async fn list_runs(state: State<'_, AppState>) -> Result<Vec<RunSummary>> {
    Ok(state.reins.runs().await?)
}

#[tauri::command]
#[specta::specta]
pub async fn run_detail(state: State<'_, AppState>, id: String) -> Result<RunDetail> {
    Ok(state.reins.run_detail(args::run_id(&id)?).await?)
}

#[tauri::command]
#[specta::specta]
pub async fn run_context(state: State<'_, AppState>, id: String) -> Result<Vec<ContextView>> {
    Ok(state.reins.context(args::run_id(&id)?).await?)
}

#[tauri::command]
#[specta::specta]
pub async fn run_usage(state: State<'_, AppState>, id: String) -> Result<UsageView> {
    Ok(state.reins.usage(args::run_id(&id)?).await?)
}

/// Queues a run of a plan file on a folder; the in-process worker picks it up.
#[tauri::command]
#[specta::specta]
pub async fn start_plan_run(
    state: State<'_, AppState>,
    plan: String,
    workspace: String,
) -> Result<String> {
    let plan = args::path("plan file", &plan)?;
    let workspace = args::path("workspace folder", &workspace)?;
    let id = changing(&state, |r| async move {
        r.create_run(&plan, &workspace, &Silent).await
    })
    .await?;
    Ok(id.to_string())
}

/// Queues an LLM run with the provider defaults from Settings.
#[tauri::command]
#[specta::specta]
pub async fn start_llm_run(state: State<'_, AppState>, start: StartLlm) -> Result<String> {
    let goal = args::line("goal", start.goal.trim())?;
    if goal.is_empty() {
        return Err(IpcError::invalid("say what the agent should do"));
    }
    let workspace = args::path("workspace folder", &start.workspace)?;
    let model = start
        .model
        .filter(|m| !m.trim().is_empty())
        .map(|m| args::line("model", m.trim()))
        .transpose()?;
    let mcp = start
        .mcp
        .unwrap_or_default()
        .iter()
        .map(|n| args::line("MCP server", n.trim()))
        .collect::<reins_core::api::Result<Vec<_>>>()?;
    // The provider defaults from Settings, the run's name and limits are decided by the core.
    let request = LlmRunRequest {
        goal,
        model,
        max_turns: start.max_turns,
        mcp,
        ..LlmRunRequest::default()
    };
    let budget = start.budget.unwrap_or_default();
    let id = changing(&state, |r| async move {
        r.create_run_within(request, &workspace, budget, &Silent)
            .await
    })
    .await?;
    Ok(id.to_string())
}

/// The external agents registered with `reins agents add`, for the New run dialog.
#[tauri::command]
#[specta::specta]
pub async fn list_agents(state: State<'_, AppState>) -> Result<Vec<AgentView>> {
    Ok(state
        .reins
        .agents()?
        .into_iter()
        .map(AgentView::from)
        .collect())
}

/// The MCP servers registered with `reins mcp add`, for the New run dialog and Settings.
#[tauri::command]
#[specta::specta]
pub async fn list_mcp_servers(state: State<'_, AppState>) -> Result<Vec<McpServerView>> {
    Ok(state
        .reins
        .mcp_servers()?
        .iter()
        .map(McpServerView::from)
        .collect())
}

/// Queues a run of an external agent (ACP); the in-process worker starts the agent and keeps it
/// while the run waits for a review.
#[tauri::command]
#[specta::specta]
pub async fn start_acp_run(state: State<'_, AppState>, start: StartAcp) -> Result<String> {
    let goal = args::line("goal", start.goal.trim())?;
    if goal.is_empty() {
        return Err(IpcError::invalid("say what the agent should do"));
    }
    let agent = args::line("agent", start.agent.trim())?;
    if agent.is_empty() {
        return Err(IpcError::invalid(
            "choose an agent (register one with `reins agents add`) or give its command line",
        ));
    }
    let workspace = args::path("workspace folder", &start.workspace)?;
    let request = AcpRunRequest {
        goal,
        agent,
        ..AcpRunRequest::default()
    };
    let budget = start.budget.unwrap_or_default();
    let id = changing(&state, |r| async move {
        r.create_run_within(request, &workspace, budget, &Silent)
            .await
    })
    .await?;
    Ok(id.to_string())
}

#[tauri::command]
#[specta::specta]
pub async fn pause_run(state: State<'_, AppState>, id: String) -> Result<Control> {
    let id = args::run_id(&id)?;
    changing(&state, |r| async move { r.pause(id).await }).await
}

#[tauri::command]
#[specta::specta]
pub async fn resume_run(state: State<'_, AppState>, id: String) -> Result<Control> {
    let id = args::run_id(&id)?;
    changing(&state, |r| async move {
        r.resume(id, ResumeMode::Continue).await
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn cancel_run(
    state: State<'_, AppState>,
    id: String,
    reason: Option<String>,
) -> Result<Control> {
    let id = args::run_id(&id)?;
    let reason = reason.map(|r| args::line("reason", &r)).transpose()?;
    changing(
        &state,
        |r| async move { r.cancel(id, reason.as_deref()).await },
    )
    .await
}

/// Rolls the run's files back to checkpoint `to`; with `dryRun`, only says what would change.
#[tauri::command]
#[specta::specta]
pub async fn rollback_run(
    state: State<'_, AppState>,
    id: String,
    to: i64,
    dry_run: bool,
) -> Result<RollbackReport> {
    let id = args::run_id(&id)?;
    if to < 0 {
        return Err(IpcError::invalid("a checkpoint seq is 0 or more"));
    }
    changing(&state, |r| async move { r.rollback(id, to, dry_run).await }).await
}
