//! What every command shares: the core facade, opened once per process on the data dir, and a way
//! to wake the watcher when this process itself changed something.

use std::sync::Arc;

use reins_core::api::Reins;
use tokio::sync::Notify;

pub struct AppState {
    pub reins: Arc<Reins>,
    /// Woken after a command or the in-process worker changed something, so the UI hears of it
    /// without waiting for the next poll.
    pub wake: Arc<Notify>,
    /// `reins serve` inside the app (Settings → Remote approvals); None: not serving.
    pub remote: std::sync::Mutex<Option<reins_serve::Running>>,
    /// What the tray count and notifications cover (Settings → Team database); the watcher
    /// follows each change at once.
    pub alerts: tokio::sync::watch::Sender<reins_core::api::AlertScope>,
    /// The OpenTelemetry follower (Settings → Traces starts it again on a new choice).
    pub telemetry: Arc<reins_core::api::TelemetryFollowing>,
}
