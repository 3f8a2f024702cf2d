//! The demo a new user is offered: a copy of the example ops workspace and a plan that stops at a
//! review, so the core loop (the agent proposes, you see the diff, you decide) shows in a minute.

use std::path::{Path, PathBuf};

use reins_core::api::{Reins, Silent};
use tauri::State;

use crate::commands::changing;
use crate::error::Result;

use crate::state::AppState;

const PLAN: &str = include_str!("../../examples/plans/fix-logrotate.toml");
const FILES: &[(&str, &str)] = &[
    (
        "config/logrotate.conf",
        include_str!("../../examples/ops-workspace/config/logrotate.conf"),
    ),
    (
        "config/nginx.conf",
        include_str!("../../examples/ops-workspace/config/nginx.conf"),
    ),
    (
        "config/nginx.conf.bak",
        include_str!("../../examples/ops-workspace/config/nginx.conf.bak"),
    ),
    (
        "logs/app.log",
        include_str!("../../examples/ops-workspace/logs/app.log"),
    ),
    (
        "docs/RUNBOOK.md",
        include_str!("../../examples/ops-workspace/docs/RUNBOOK.md"),
    ),
    (
        "tmp/render-cache.tmp",
        include_str!("../../examples/ops-workspace/tmp/render-cache.tmp"),
    ),
];

/// Writes a fresh demo workspace and its plan under `root`; returns (plan, workspace). Not inside
/// the data dir: Reins protects its own data from agents, so every path there would be high risk.
pub fn write(root: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
    let stamp = reins_core::api::now_ms();
    let dir = root.join(format!("reins-demo-{stamp}"));
    let ws = dir.join("workspace");
    for (rel, text) in FILES {
        let path = ws.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    let plan = dir.join("fix-logrotate.toml");
    std::fs::write(&plan, PLAN)?;
    Ok((plan, ws))
}

/// Queues the demo run on a fresh demo workspace in the temp dir; returns its id.
pub async fn start(reins: &Reins) -> reins_core::api::Result<String> {
    let (plan, ws) = write(&std::env::temp_dir()).map_err(|e| {
        reins_core::api::Error::Invalid(format!("cannot write the demo workspace: {e}"))
    })?;
    Ok(reins.create_run(&plan, &ws, &Silent).await?.to_string())
}

#[tauri::command]
#[specta::specta]
pub async fn start_demo(state: State<'_, AppState>) -> Result<String> {
    changing(&state, |r| async move { start(&r).await }).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn demo_workspace_holds_the_example_files_and_a_plan() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let (plan, ws) = super::write(dir.path()).unwrap_or_else(|e| panic!("write: {e}"));
        assert!(std::fs::read_to_string(plan)
            .unwrap_or_default()
            .contains("[[steps]]"));
        let conf = std::fs::read_to_string(ws.join("config/logrotate.conf")).unwrap_or_default();
        assert!(!conf.is_empty(), "the file the demo edits must be there");
    }
}
