//! The app's IPC commands: one-line adapters over `reins_core::api::Reins`, with every argument
//! checked first (see `args`). The list below is also declared in `build.rs` so that only the main
//! window, through `capabilities/main.json`, may call them.

pub mod approvals;
pub mod audit;
pub mod budget;
pub mod machine;
pub mod memory;
pub mod policy;
pub mod remote;
pub mod rules;
pub mod runs;
pub mod settings;
pub mod team;
pub mod telemetry;

use tauri::State;

use crate::state::AppState;

/// Runs `f` on the facade and wakes the watcher afterwards (the change is shown at once).
pub(crate) async fn changing<T, F, Fut>(
    state: &State<'_, AppState>,
    f: F,
) -> crate::error::Result<T>
where
    F: FnOnce(std::sync::Arc<reins_core::api::Reins>) -> Fut,
    Fut: std::future::Future<Output = reins_core::api::Result<T>>,
{
    let out = f(state.reins.clone()).await;
    state.wake.notify_one();
    Ok(out?)
}
