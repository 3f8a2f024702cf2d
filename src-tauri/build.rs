//! Declares the app's commands so none is open to a window by default: `capabilities/main.json`
//! grants them to the main window only. Keep this list equal to `reins_app::specta()`'s (a test
//! checks it).

pub const COMMANDS: &[&str] = &[
    "list_runs",
    "run_detail",
    "run_context",
    "run_usage",
    "start_plan_run",
    "start_llm_run",
    "list_agents",
    "list_mcp_servers",
    "start_acp_run",
    "pause_run",
    "resume_run",
    "cancel_run",
    "rollback_run",
    "list_approvals",
    "approval",
    "approve",
    "reject",
    "memory_list",
    "memory_show",
    "memory_edit",
    "memory_delete",
    "memory_clear",
    "memory_suggestions",
    "memory_accept",
    "memory_dismiss",
    "memory_settings",
    "memory_set_enabled",
    "audit_page",
    "audit_verify",
    "audit_export",
    "list_grants",
    "revoke_grant",
    "app_info",
    "provider_defaults",
    "set_provider_defaults",
    "key_status",
    "key_set",
    "key_delete",
    "clean_up",
    "pick_folder",
    "pick_file",
    "check_model_server",
    "agents_on_path",
    "register_found_agent",
    "claude_hooks",
    "set_claude_hooks",
    "policy_state",
    "policy_try",
    "open_policy_file",
    "start_demo",
];

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .unwrap_or_else(|e| panic!("tauri build script: {e:#}"));
}
