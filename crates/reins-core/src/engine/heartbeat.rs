//! Keeps a worker's lease alive while it drives a run, even through a long effect, and notices when
//! the run was taken away or a person asked it to pause.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::store::Pool;

use crate::clock::now_ms;
use crate::ids::RunId;
use crate::run::RunState;
use crate::store::runs;

/// What the heartbeat has learned, shared with the drive.
#[derive(Debug)]
pub(super) struct LeaseWatch {
    /// Our lease ends here, as last written by us.
    until: AtomicI64,
    lost: AtomicBool,
    pause_requested: AtomicBool,
}

impl LeaseWatch {
    pub(super) fn until(&self) -> i64 {
        self.until.load(Ordering::Relaxed)
    }

    pub(super) fn renewed(&self, until: i64) {
        self.until.fetch_max(until, Ordering::Relaxed);
    }

    pub(super) fn lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// The run was seen taken away (cancelled, moved by another process) outside a heartbeat.
    pub(super) fn mark_lost(&self) {
        self.lost.store(true, Ordering::Relaxed);
    }

    pub(super) fn pause_requested(&self) -> bool {
        self.pause_requested.load(Ordering::Relaxed)
    }
}

/// The background renewal; stops when dropped.
pub(super) struct Heartbeat {
    watch: Arc<LeaseWatch>,
    task: tokio::task::JoinHandle<()>,
}

impl Heartbeat {
    /// Renews every third of `lease_ms`. Needs a Tokio runtime.
    pub(super) fn start(
        pool: Pool,
        run: RunId,
        fence: i64,
        lease_ms: i64,
        until: i64,
    ) -> Self {
        let watch = Arc::new(LeaseWatch {
            until: AtomicI64::new(until),
            lost: AtomicBool::new(false),
            pause_requested: AtomicBool::new(false),
        });
        let shared = Arc::clone(&watch);
        let every = Duration::from_millis(u64::try_from(lease_ms / 3).unwrap_or(1000).max(50));
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let now = now_ms();
                match runs::heartbeat(&pool, run, fence, now + lease_ms, now).await {
                    Ok(Some(state)) => {
                        shared.renewed(now + lease_ms);
                        shared
                            .pause_requested
                            .store(state == RunState::PauseRequested, Ordering::Relaxed);
                    }
                    Ok(None) => {
                        shared.lost.store(true, Ordering::Relaxed);
                        return;
                    }
                    // Busy or a transient I/O error: the next beat tries again; the lease has slack.
                    Err(e) => tracing::warn!(run_id = %run, "heartbeat failed: {e}"),
                }
            }
        });
        Self { watch, task }
    }

    pub(super) fn watch(&self) -> &LeaseWatch {
        &self.watch
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}
