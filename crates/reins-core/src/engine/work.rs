//! A worker: drives runnable runs until none is left, or for as long as it runs. Between looks it
//! waits for a commit (on a shared database, any machine's: a run queued, an approval decided, a
//! pause asked for) or at most its poll, which also catches leases that ran out. It watches the
//! files of pending approvals (a card whose files changed is superseded at once) and waits out a
//! shared database that went away.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::approval::watch::Watch;
use crate::approval::Status;
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::run::RunState;
use crate::store::{approvals, runs, wake::Waiter};

use super::{DriveOutcome, Engine, Observer};

/// How long a worker leaves a run another process holds (its agent's session runs there).
const HELD_MS: i64 = 1_000;

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkSummary {
    pub driven: usize,
    pub finished: usize,
    pub waiting: usize,
    /// Paused at a safe point, by a person or because this worker was asked to drain.
    pub paused: usize,
    /// Let go after a transient failure, to be retried after a backoff.
    pub retrying: usize,
    pub lost: usize,
}

impl Engine {
    /// Drives runnable runs until none is left (`once`) or forever.
    pub async fn work(
        &self,
        once: bool,
        poll: Duration,
        observer: &dyn Observer,
    ) -> Result<WorkSummary> {
        let mut summary = WorkSummary::default();
        // Runs this loop let go into a retry backoff: a drain pauses them where they wait.
        let mut backing_off: Vec<RunId> = Vec::new();
        // Runs skipped on the last pass (another worker or process has them), and until when.
        let mut held: std::collections::HashMap<RunId, i64> = Default::default();
        // Pending approvals whose files change on disk are superseded at once; overdue ones expire.
        let mut watch = match Watch::new() {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("cannot watch files of pending approvals ({e}); they are re-checked when decided");
                None
            }
        };
        // A shared database out of reach (restarting, the network) is waited for, with backoff.
        let mut reconnect = Reconnect::default();
        let mut waiter = self.store.waiter();
        // Another worker claimed a run between this one's look and its claim.
        let mut contended = false;
        loop {
            if self.draining() {
                return self.drained(summary, &backing_off).await;
            }
            let looked = match watch.as_mut() {
                Some(w) => self.watch_approvals(w).await.map(|_| ()),
                None => self.expire_due().await,
            };
            let now = now_ms();
            held.retain(|_, until| *until > now);
            let looked = match looked {
                Ok(()) => self.runnable().await,
                Err(e) => Err(e),
            };
            let mut ids = match looked {
                Ok(ids) => {
                    reconnect.reached();
                    ids
                }
                Err(e) if reconnect.waits_out(&e) => {
                    self.sleep_unless_draining(reconnect.next()).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            ids.retain(|id| !held.contains_key(id));
            // Oldest first. But when other workers took runs from under this one on its last pass,
            // the team's workers are racing down the same list: this one starts at a place of its
            // own in it, so they claim different runs instead of all but one losing each claim.
            if std::mem::take(&mut contended) && ids.len() > 1 {
                let start = uuid::Uuid::new_v4().as_u128() % ids.len() as u128;
                ids.rotate_left(usize::try_from(start).unwrap_or(0));
            }
            if ids.is_empty() {
                if once {
                    // A run waiting out a retry backoff is still this worker's work.
                    match runs::next_retry_at(self.store.pool()).await? {
                        Some(at) => {
                            let wait = (at - now_ms()).clamp(10, 60_000);
                            self.sleep_unless_draining(Duration::from_millis(wait.unsigned_abs()))
                                .await;
                            continue;
                        }
                        None => return Ok(summary),
                    }
                }
                self.nap(&mut waiter, poll).await;
                continue;
            }
            for id in ids {
                if self.draining() {
                    return self.drained(summary, &backing_off).await;
                }
                let outcome = match self.drive(id, observer).await {
                    Ok(outcome) => outcome,
                    // Its lease runs out while the database is away; it is taken up again after.
                    Err(e) if reconnect.waits_out(&e) => {
                        self.sleep_unless_draining(reconnect.next()).await;
                        break;
                    }
                    Err(e) => return Err(e),
                };
                match outcome {
                    // Claimed by someone else between our look and our claim, no longer runnable,
                    // or its agent's session runs in another process: left for a moment.
                    DriveOutcome::Skipped { .. } => {
                        contended = true;
                        held.insert(id, now_ms() + HELD_MS);
                        continue;
                    }
                    DriveOutcome::Finished { .. } => summary.finished += 1,
                    DriveOutcome::NeedsHuman {
                        state: RunState::Paused,
                        ..
                    } => summary.paused += 1,
                    DriveOutcome::NeedsHuman { .. } => summary.waiting += 1,
                    DriveOutcome::Retrying { .. } => {
                        summary.retrying += 1;
                        if !backing_off.contains(&id) {
                            backing_off.push(id);
                        }
                    }
                    DriveOutcome::Lost { .. } => summary.lost += 1,
                }
                summary.driven += 1;
            }
        }
    }

    /// One round of watching pending approvals: expires overdue ones, points `watch` at the files
    /// the pending ones would change, and supersedes every approval whose files changed since the
    /// last round. Returns the ids superseded.
    pub async fn watch_approvals(&self, watch: &mut Watch) -> Result<Vec<String>> {
        self.expire_due().await?;
        let pool = self.store.pool();
        let pending = approvals::list(pool, Some(Status::Pending), None).await?;
        let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
        for a in &pending {
            let Ok(row) = runs::get(pool, a.run_id).await else {
                continue;
            };
            for img in &a.pre_images {
                files.push((a.id.clone(), Path::new(&row.workspace).join(&img.path)));
            }
        }
        let changed = watch.changed();
        watch.sync(files.iter().map(|(_, p)| p.as_path()));
        let mut superseded = Vec::new();
        for (id, path) in &files {
            if changed.contains(path)
                && !superseded.contains(id)
                && self.refresh_approval(id).await?.is_some()
            {
                superseded.push(id.clone());
            }
        }
        Ok(superseded)
    }

    /// The end of a drained work loop: every run it let go into a retry backoff is paused where
    /// it waits (its checkpoint verified), so the process exits now rather than after the backoff.
    async fn drained(&self, mut summary: WorkSummary, backing_off: &[RunId]) -> Result<WorkSummary> {
        for id in backing_off {
            if self.pause_backoff_for_drain(*id).await?.is_some() {
                summary.paused += 1;
            }
        }
        Ok(summary)
    }

    /// Waits for a commit or `total`, whichever is first, and wakes early for a drain.
    async fn nap(&self, waiter: &mut Waiter, total: Duration) {
        tokio::select! {
            _ = waiter.wait(total) => {}
            () = self.sleep_unless_draining(total) => {}
        }
    }

    /// Sleeps for `total`, waking early when a drain is requested.
    pub async fn sleep_unless_draining(&self, total: Duration) {
        let step = Duration::from_millis(50);
        let mut slept = Duration::ZERO;
        while slept < total && !self.draining() {
            tokio::time::sleep(step.min(total - slept)).await;
            slept += step;
        }
    }
}

/// Waiting for a database that went away: 250 ms, doubling to 5 s, said once per outage.
#[derive(Default)]
struct Reconnect {
    failures: u32,
}

impl Reconnect {
    /// Whether `e` means the database is out of reach for now (then the caller waits `next()`).
    fn waits_out(&mut self, e: &Error) -> bool {
        let transient_store = matches!(e, Error::Store(s) if s.is_transient());
        if transient_store {
            if self.failures == 0 {
                tracing::warn!("the database is out of reach ({e}); connecting again with backoff");
            }
            self.failures += 1;
        }
        transient_store
    }

    fn next(&self) -> Duration {
        let exp = self.failures.saturating_sub(1).min(5);
        Duration::from_millis((250u64 << exp).min(5_000))
    }

    fn reached(&mut self) {
        if self.failures > 0 {
            tracing::info!("the database is back after {} attempt(s)", self.failures);
        }
        self.failures = 0;
    }
}
