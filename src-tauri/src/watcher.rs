//! The in-process worker and the watcher that keeps the screens, the tray and the notifications
//! current. The watcher compares the store's change stamp, so changes made by the `reins` CLI on the
//! same data dir show up too.

use std::sync::Arc;
use std::time::Duration;

use reins_core::api::{AlertScope, Alerts, Progress};
use reins_core::api::{Observer as RunObserver, Reins};
use tauri::AppHandle;
use tauri_specta::Event as _;
use tokio::sync::Notify;

use crate::events::Changed;

/// How often the store is looked at when nothing in this process said it changed.
const POLL: Duration = Duration::from_millis(120);

/// Wakes the watcher whenever the in-process worker did something a screen shows.
struct Waker(Arc<Notify>);

impl RunObserver for Waker {
    fn on(&self, progress: &Progress) {
        if !matches!(progress, Progress::Text { .. } | Progress::Thinking { .. }) {
            self.0.notify_one();
        }
    }
}

/// Drives runnable runs until the app drains (quit), retrying after a storage error.
pub async fn work(reins: Arc<Reins>, wake: Arc<Notify>) {
    let observer = Waker(wake);
    loop {
        match reins
            .work(false, Duration::from_millis(200), &observer)
            .await
        {
            Ok(_) => return,
            Err(e) => {
                tracing::error!("the worker stopped on an error and restarts in 1 s: {e}");
                if reins.draining() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Keeps the screens, the tray count and the notifications current. On a team database the tray
/// and the notifications cover what `scope` says (the whole team, or runs started on this
/// machine; see `reins_core::api::Alerts`); the screens always show everything.
pub async fn watch(
    app: AppHandle,
    reins: Arc<Reins>,
    wake: Arc<Notify>,
    mut scope: tokio::sync::watch::Receiver<AlertScope>,
) {
    let shared = reins.shared();
    let here = reins.this_machine();
    let mut alerts = Alerts::default();
    // Any process's commit wakes it before the poll (see `Reins::changes`).
    let mut changes = reins.changes(POLL);
    loop {
        tokio::select! {
            _ = wake.notified() => {}
            _ = changes.wait() => {}
            changed = scope.changed() => {
                // The choice changed: count again now, though the store did not change.
                if changed.is_ok() {
                    changes.forget();
                }
            }
        }
        if reins.draining() {
            // Quitting: the store is about to close.
            return;
        }
        match changes.moved().await {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                tracing::warn!("cannot read the store: {e}");
                continue;
            }
        }
        let pending = match reins
            .approvals(Some(reins_core::api::ApprovalStatus::Pending), None)
            .await
        {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("cannot list approvals: {e}");
                continue;
            }
        };
        let runs = reins
            .runs()
            .await
            .inspect_err(|e| tracing::warn!("cannot list runs: {e}"))
            .ok();
        let covered = *scope.borrow_and_update();
        let alert = alerts.update(pending, runs.as_deref(), covered, shared, &here);
        crate::tray::show_waiting(&app, &alert.first);
        for (a, run) in &alert.fresh {
            crate::notice::card(&app, &reins, &wake, a, run);
        }
        for r in &alert.suspended {
            crate::notice::suspended(r);
        }
        let event = Changed {
            pending: u32::try_from(alert.waiting).unwrap_or(u32::MAX),
            new_approvals: alert.fresh.iter().map(|(a, _)| a.id.clone()).collect(),
        };
        crate::tray::show_pending(&app, event.pending);
        if let Err(e) = event.emit(&app) {
            tracing::warn!("cannot tell the window: {e}");
        }
    }
}

/// Reads the policy file again whenever it changes, so an edit in the user's editor decides the
/// next action; a file that does not parse keeps the last good rules (the Policy view says why).
pub async fn watch_policy(reins: Arc<Reins>) {
    reins.watch_policy(reins_core::api::POLICY_POLL).await;
}
