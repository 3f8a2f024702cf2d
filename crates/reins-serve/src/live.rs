//! Live updates over Server-Sent Events. One watcher per server looks at the store's change stamp
//! (so changes made by a worker, the app or the CLI on the same data dir show up too) and tells
//! every connected browser what the desktop app's `changed` event tells its window.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use reins_core::api::{ApprovalStatus, Reins};
use serde::Serialize;
use tokio::sync::{broadcast, Notify};

use crate::Shared;

/// How often the store is looked at when nothing in this server said it changed.
const POLL: Duration = Duration::from_millis(100);
/// How often a quiet event stream asks whether its device is still paired.
const RECHECK: Duration = Duration::from_secs(5);

/// Something the screens show changed; the browser refetches what it displays.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Changed {
    pub pending: u32,
    /// Approvals that became pending since the last event, oldest first.
    pub new_approvals: Vec<String>,
}

pub async fn watch(reins: Arc<Reins>, wake: Arc<Notify>, tx: broadcast::Sender<Changed>) {
    let mut known: Option<HashSet<String>> = None;
    // Any process's commit wakes it before the poll (see `Reins::changes`).
    let mut changes = reins.changes(POLL);
    loop {
        tokio::select! {
            _ = wake.notified() => {}
            _ = changes.wait() => {}
        }
        match changes.moved().await {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                tracing::warn!("cannot read the store: {e}");
                continue;
            }
        }
        let pending = match reins.approvals(Some(ApprovalStatus::Pending), None).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("cannot list approvals: {e}");
                continue;
            }
        };
        let new_approvals = match &known {
            Some(k) => pending
                .iter()
                .filter(|a| !k.contains(&a.id))
                .map(|a| a.id.clone())
                .collect(),
            None => Vec::new(),
        };
        known = Some(pending.iter().map(|a| a.id.clone()).collect());
        // Nobody listening is fine: the next browser to connect refetches anyway.
        let _ = tx.send(Changed {
            pending: u32::try_from(pending.len()).unwrap_or(u32::MAX),
            new_approvals,
        });
    }
}

pub async fn events(
    State(shared): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = shared.changes.subscribe();
    // The guard let the device in; the stream asks again before each event and every few
    // seconds, so a device revoked meanwhile hears nothing more.
    let token = crate::guard::bearer_in(&headers)
        .unwrap_or_default()
        .to_owned();
    // A first event at once: the browser knows the stream is up and fetches what it shows.
    let start = (true, rx, shared, token);
    let stream = futures_util::stream::unfold(start, |(first, mut rx, shared, token)| async move {
        if first {
            let ready = Ok(Event::default().event("ready").data("{}"));
            return Some((ready, (false, rx, shared, token)));
        }
        loop {
            let got = tokio::select! {
                r = rx.recv() => Some(r),
                () = tokio::time::sleep(RECHECK) => None,
            };
            if !matches!(shared.reins.device_for_token(&token).await, Ok(Some(_))) {
                return None;
            }
            let changed = match got {
                None => continue,
                Some(Ok(c)) => c,
                // Fell behind: something changed, the browser refetches everything.
                Some(Err(broadcast::error::RecvError::Lagged(_))) => Changed {
                    pending: 0,
                    new_approvals: Vec::new(),
                },
                Some(Err(broadcast::error::RecvError::Closed)) => return None,
            };
            let data = serde_json::to_string(&changed).unwrap_or_else(|_| "{}".into());
            return Some((
                Ok(Event::default().event("changed").data(data)),
                (false, rx, shared, token),
            ));
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
