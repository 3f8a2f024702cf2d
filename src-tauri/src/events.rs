//! Typed events from Rust to the UI (their TypeScript comes from the same definitions).

use serde::{Deserialize, Serialize};

/// Something the screens show changed (here or in another process on the same data dir); the UI
/// refetches what it displays.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
#[serde(rename_all = "camelCase")]
pub struct Changed {
    /// Pending approvals now, among the runs the tray covers (Settings → Team database: the whole
    /// team's, or runs started on this machine).
    pub pending: u32,
    /// Approvals that became pending since the last event, oldest first.
    pub new_approvals: Vec<String>,
}

/// Show this approval (a notification or the tray was clicked).
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
#[serde(rename_all = "camelCase")]
pub struct OpenApproval {
    pub id: String,
}
