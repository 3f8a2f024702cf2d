//! Desktop notifications. A new card's names the agent, the action and the risk in one line; a low-
//! or medium-risk card's also carries Approve and Reject, which decide exactly the action it showed
//! (bound to its hash, as a click on the card) and are audited as decided "from the notification".
//! Nothing is decided from a notification while the screen is locked, or when whether it is locked
//! cannot be known: a notification can be answered from a lock screen by whoever stands there. A
//! high-risk card's notification only opens the card.

use std::sync::Arc;
use std::time::Duration;

use reins_core::api::{face, ApprovalView, ApproveRequest, Reins, Risk, Scope};
use tauri::AppHandle;
use tauri_specta::Event as _;
use tokio::sync::Notify;

use crate::events::OpenApproval;

/// The reason a rejection from a notification gives (the app can say more afterwards, in a note).
pub const REJECTED: &str = "rejected from the notification";

/// The one line a card's notification shows: run, agent, action and risk.
pub fn line(a: &ApprovalView, run: &str) -> String {
    let line = format!(
        "{run}: {} wants {} {} ({} risk)",
        a.agent, a.tool, a.subject, a.risk
    );
    line.chars().take(160).collect()
}

/// Shows a new card's notification and carries out what the person picks on it.
pub fn card(app: &AppHandle, reins: &Arc<Reins>, wake: &Arc<Notify>, a: &ApprovalView, run: &str) {
    let decidable = a.risk != Risk::High;
    let summary = line(a, run);
    let why = a
        .context
        .why
        .clone()
        .unwrap_or_else(|| a.reasons.join("; "));
    let body: String = why.chars().take(200).collect();
    let (id, hash) = (a.id.clone(), a.action_hash.clone());
    let what = format!("{} {}", a.tool, a.subject);
    let (app, reins, wake) = (app.clone(), reins.clone(), wake.clone());
    // The notification server may be absent (a headless session): that is logged, not fatal.
    std::thread::spawn(move || {
        let mut n = notify_rust::Notification::new();
        n.appname("Reins")
            .summary(&summary)
            .body(&body)
            .action("default", "Review");
        if decidable {
            n.action("approve", "Approve").action("reject", "Reject");
        }
        match n.show() {
            Ok(handle) => handle.wait_for_action(|action| {
                tracing::info!("notification for approval {id}: {action}");
                match action {
                    // A click on the notification's body is its default action.
                    "default" => open_approval(&app, &id),
                    "approve" | "reject" if decidable => {
                        let approve = action == "approve";
                        let (reins, wake, id, hash, what) = (
                            reins.clone(),
                            wake.clone(),
                            id.clone(),
                            hash.clone(),
                            what.clone(),
                        );
                        tauri::async_runtime::spawn(async move {
                            let said = decide(&reins, &id, &hash, approve, &what).await;
                            wake.notify_one();
                            tell(said);
                        });
                    }
                    _ => {}
                }
            }),
            Err(e) => tracing::info!("no desktop notification ({e})"),
        }
    });
}

/// Decides card `id` as the notification showed it (`hash`; `what` it named), if the screen is
/// known to be unlocked. The decision checks the card as a click on it would: a card decided
/// elsewhere, or whose files changed since (it is replaced), is refused. Returns what to tell the
/// person.
async fn decide(reins: &Reins, id: &str, hash: &str, approve: bool, what: &str) -> String {
    match screen_locked().await {
        Ok(false) => {}
        Ok(true) => {
            return "Not decided: the screen is locked. Unlock it and decide in Reins.".into()
        }
        Err(e) => {
            return format!(
            "Not decided: whether the screen is locked cannot be known ({e}), so a notification \
                 cannot decide. Open Reins to decide."
        )
        }
    }
    let by = face::notification_person();
    let done = if approve {
        let req = ApproveRequest {
            scope: Scope::Once,
            pattern: None,
            edited: None,
            note: None,
            expect_hash: Some(hash.to_owned()),
            by,
            leave_out: Vec::new(),
        };
        reins
            .approve(id, req)
            .await
            .map(|_| format!("Approved {what} (once)"))
    } else {
        reins
            .reject(id, REJECTED, &by)
            .await
            .map(|_| format!("Rejected {what}"))
    };
    done.unwrap_or_else(|e| format!("Not decided: {e}"))
}

/// What the session says of its lock: `org.freedesktop.ScreenSaver` (KDE, Xfce, and GNOME's
/// own name for it); an error when no answer comes.
async fn screen_locked() -> Result<bool, String> {
    let ask = async {
        let conn = zbus::Connection::session()
            .await
            .map_err(|e| e.to_string())?;
        let mut last = String::new();
        for name in ["org.freedesktop.ScreenSaver", "org.gnome.ScreenSaver"] {
            let path = format!("/{}", name.replace('.', "/"));
            match conn
                .call_method(Some(name), path.as_str(), Some(name), "GetActive", &())
                .await
            {
                Ok(reply) => {
                    return reply
                        .body()
                        .deserialize::<bool>()
                        .map_err(|e| e.to_string())
                }
                Err(e) => last = format!("{name}: {e}"),
            }
        }
        Err(last)
    };
    tokio::time::timeout(Duration::from_secs(3), ask)
        .await
        .unwrap_or_else(|_| Err("the screen saver did not answer".into()))
}

/// A short notification saying what a decision from a notification did.
fn tell(said: String) {
    std::thread::spawn(move || {
        if let Err(e) = notify_rust::Notification::new()
            .appname("Reins")
            .summary(&said)
            .show()
        {
            tracing::info!("no desktop notification ({e})");
        }
    });
}

/// A desktop notification for a run that stopped for a person: suspended, it needs a change before
/// it can go on (no model server, a refused key, a full disk); paused at its budget, it needs more
/// allowed or to be stopped. The reason says what to do.
pub fn suspended(run: &reins_core::api::RunSummary) {
    let summary = if run.state == reins_core::api::RunState::Suspended {
        format!("\u{201c}{}\u{201d} is suspended", run.name)
    } else {
        format!("\u{201c}{}\u{201d} paused at its budget", run.name)
    };
    let body: String = run
        .last_error
        .as_deref()
        .unwrap_or("it needs a person")
        .chars()
        .take(240)
        .collect();
    std::thread::spawn(move || {
        if let Err(e) = notify_rust::Notification::new()
            .appname("Reins")
            .summary(&summary)
            .body(&body)
            .show()
        {
            tracing::info!("no desktop notification ({e})");
        }
    });
}

/// Brings the window up on the approval.
pub fn open_approval(app: &AppHandle, id: &str) {
    crate::show_main(app);
    if let Err(e) = (OpenApproval { id: id.to_owned() }).emit(app) {
        tracing::warn!("cannot tell the window: {e}");
    }
}
