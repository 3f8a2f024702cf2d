//! Wake-ups: a counter that moves whenever a write transaction of this process commits and, on a
//! shared PostgreSQL, whenever another machine commits something it may act on. Such a write
//! transaction queues a `NOTIFY` on one channel as it begins (`Dialect::begin_write`; PostgreSQL
//! delivers it only if the transaction commits); a step's own commits in a run its worker holds
//! do not (`write::steps_own`, `Dialect::begin_quiet_write`). Each process keeps one
//! connection listening. So a worker waiting for work, or an inbox waiting for cards,
//! hears of a run queued, an approval decided or expired, a pause or cancel asked for, or a grant
//! revoked at once, instead of at its next poll.
//!
//! Waiters still poll, slowly: a notification sent while the listening connection was down is
//! lost, and the next look catches what it said. On SQLite, other processes are only seen by
//! polling, as before.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener};
use tokio::sync::watch;

/// The channel every write transaction notifies on a shared database.
pub const CHANNEL: &str = "reins_changed";


/// Waits between attempts to listen again after the connection was lost.
const RELISTEN: [Duration; 4] = [
    Duration::from_millis(250),
    Duration::from_millis(1_000),
    Duration::from_millis(2_500),
    Duration::from_millis(5_000),
];

/// Whether the listener is up: waiters report it, and `reins doctor` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listening {
    /// An embedded database: only this process's commits wake it.
    Local,
    /// Listening on the shared database.
    Up,
    /// The listening connection is down; waiters fall back to polling until it is back.
    Down,
}

pub struct Wake {
    count: watch::Sender<u64>,
    listening: watch::Sender<Listening>,
    listener: Option<tokio::task::AbortHandle>,
    /// An embedded database's file, watched once somebody waits: another process's commit
    /// writes it, and wakes this one's waiters at once instead of at their next poll.
    file: Option<std::path::PathBuf>,
    watcher: std::sync::OnceLock<Option<notify::RecommendedWatcher>>,
}

impl std::fmt::Debug for Wake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wake")
            .field("count", &*self.count.borrow())
            .field("listening", &*self.listening.borrow())
            .finish()
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        if let Some(task) = &self.listener {
            task.abort();
        }
    }
}

impl Wake {
    /// Wakes for this process's own commits, and for any process's commit to the database file
    /// `file` (an embedded database's).
    pub fn local(file: Option<std::path::PathBuf>) -> Arc<Self> {
        Arc::new(Self {
            count: watch::channel(0).0,
            listening: watch::channel(Listening::Local).0,
            listener: None,
            file,
            watcher: std::sync::OnceLock::new(),
        })
    }

    /// Also listens on the shared database, reconnecting with backoff for as long as it lives.
    /// Needs the async runtime.
    pub fn listening(options: PgConnectOptions) -> Arc<Self> {
        let count = watch::channel(0).0;
        let listening = watch::channel(Listening::Down).0;
        let task = tokio::spawn(listen(options, count.clone(), listening.clone()));
        Arc::new(Self {
            count,
            listening,
            listener: Some(task.abort_handle()),
            file: None,
            watcher: std::sync::OnceLock::new(),
        })
    }

    /// Something committed.
    pub fn bump(&self) {
        self.count.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub fn listening_state(&self) -> Listening {
        *self.listening.borrow()
    }

    /// A waiter that has seen everything so far.
    pub fn subscribe(&self) -> Waiter {
        self.watcher.get_or_init(|| self.watch_file());
        let mut rx = self.count.subscribe();
        rx.borrow_and_update();
        Waiter { rx }
    }
}

impl Wake {
    /// Watches the embedded database's file (and its write-ahead log) for other processes'
    /// commits. Where the file cannot be watched, waiters poll as before.
    fn watch_file(&self) -> Option<notify::RecommendedWatcher> {
        use notify::Watcher as _;
        let file = self.file.as_ref()?;
        let dir = file.parent()?.to_path_buf();
        let name = file.file_name()?.to_string_lossy().into_owned();
        let wal = format!("{name}-wal");
        let count = self.count.clone();
        let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
            let Ok(e) = e else { return };
            let ours = e.paths.iter().any(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_str() == Some(name.as_str()) || n.to_str() == Some(wal.as_str()))
            });
            if ours && matches!(e.kind, notify::EventKind::Modify(_) | notify::EventKind::Create(_)) {
                count.send_modify(|n| *n = n.wrapping_add(1));
            }
        })
        .inspect_err(|e| tracing::debug!("cannot watch the database file: {e}"))
        .ok()?;
        watcher
            .watch(&dir, notify::RecursiveMode::NonRecursive)
            .inspect_err(|e| tracing::debug!("cannot watch {}: {e}", dir.display()))
            .ok()?;
        Some(watcher)
    }
}

async fn listen(
    options: PgConnectOptions,
    count: watch::Sender<u64>,
    listening: watch::Sender<Listening>,
) {
    let bump = || count.send_modify(|n| *n = n.wrapping_add(1));
    // A pool of its own, so listening never takes a connection the store's work needs.
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(15))
        .connect_lazy_with(options);
    let mut failures = 0usize;
    loop {
        let connected = async {
            let mut listener = PgListener::connect_with(&pool).await?;
            listener.listen(CHANNEL).await?;
            Ok::<_, sqlx::Error>(listener)
        }
        .await;
        match connected {
            Ok(mut listener) => {
                if failures > 0 {
                    tracing::info!("listening for the team's changes again");
                }
                failures = 0;
                // What happened while nobody listened is looked at now.
                bump();
                listening.send_replace(Listening::Up);
                // Until the connection drops (Ok(None) or an error): notifications sent
                // meanwhile are lost, and the bump below has waiters look again.
                while let Ok(Some(_)) = listener.try_recv().await {
                    bump();
                }
                listening.send_replace(Listening::Down);
                bump();
            }
            Err(e) => {
                if failures == 0 {
                    tracing::warn!("cannot listen for the team's changes ({e}); polling until it can");
                }
            }
        }
        let wait = RELISTEN[failures.min(RELISTEN.len() - 1)];
        failures += 1;
        tokio::time::sleep(wait).await;
    }
}

/// One waiter's view of the counter.
pub struct Waiter {
    rx: watch::Receiver<u64>,
}

impl Waiter {
    /// Waits until something commits or `at_most` passes; true when woken by a commit. What
    /// committed between two waits wakes the next one at once.
    pub async fn wait(&mut self, at_most: Duration) -> bool {
        match tokio::time::timeout(at_most, self.rx.changed()).await {
            Ok(Ok(())) => {
                self.rx.borrow_and_update();
                true
            }
            Ok(Err(_)) => {
                // The store is gone: nothing will wake this waiter again, so it just sleeps.
                tokio::time::sleep(at_most).await;
                false
            }
            Err(_) => false,
        }
    }
}

/// What screens watch: the store's change stamp (the audit chain's head and the latest run
/// update), looked at whenever something may have changed — a commit of this process, a team's
/// notification, another process's write to the database file — and at least every `poll`.
pub struct Changes {
    waiter: Waiter,
    pool: super::Pool,
    poll: Duration,
    last: Option<(i64, i64)>,
}

impl Changes {
    pub(super) fn new(waiter: Waiter, pool: super::Pool, poll: Duration) -> Self {
        Self {
            waiter,
            pool,
            poll,
            last: None,
        }
    }

    /// Waits until something may have changed, or the poll.
    pub async fn wait(&mut self) {
        self.waiter.wait(self.poll).await;
    }

    /// Whether what screens show changed since the last look (the first look: it did).
    pub async fn moved(&mut self) -> super::Result<bool> {
        let stamp = super::audit::change_stamp(&self.pool).await?;
        Ok(self.last.replace(stamp) != Some(stamp))
    }

    /// The next look counts as a change (what it is shown for changed: the alert scope).
    pub fn forget(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_commit_wakes_a_waiter_and_a_quiet_store_lets_it_sleep() {
        let wake = Wake::local(None);
        let mut waiter = wake.subscribe();
        assert!(!waiter.wait(Duration::from_millis(20)).await, "nothing committed");
        wake.bump();
        assert!(waiter.wait(Duration::from_secs(5)).await);
        // Seen once: the next wait sleeps again.
        assert!(!waiter.wait(Duration::from_millis(20)).await);
        // A bump between two waits is not missed.
        wake.bump();
        assert!(waiter.wait(Duration::from_secs(5)).await);
    }
}
