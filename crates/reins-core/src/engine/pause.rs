//! Pausing at a safe point: on a person's request, when the worker drains, or at the run's
//! budget. Each writes a checkpoint, reads it back and verifies it, and only then marks the run
//! paused.

use crate::checkpoint::Level;
use crate::error::Result;
use crate::event::{self as ev, Actor};
use crate::run::RunState;
use crate::store::audit;
use crate::store::write::Transition;

use super::commit::Change;
use super::drive::{Drive, Stop};
use super::DriveOutcome;

impl Drive<'_> {
    /// Pauses here on request, or because the worker is shutting down (`draining`).
    pub(super) async fn pause_here(&mut self, draining: bool) -> Result<DriveOutcome> {
        let reason = if draining {
            "the worker is shutting down (drain); `reins resume` continues the run"
        } else {
            "paused on request; `reins resume` continues the run"
        };
        let (run, worker) = (self.run, self.e.worker.clone());
        self.pause_verified(reason.into(), move |_, by_worker| {
            // Nobody asked: the worker itself pauses the run because it is shutting down.
            by_worker
                .then(|| {
                    audit::Event::new(
                        Actor::System,
                        Some(run),
                        ev::Kind::DrainPauseRequested(ev::DrainPause {
                            by: "worker drain".into(),
                            worker,
                        }),
                    )
                })
                .into_iter()
                .collect()
        })
        .await
    }

    /// Writes a verified checkpoint and pauses the run with `reason`. `first` gives the events that
    /// come before `run.paused`, from the checkpoint's seq and whether the worker requested the
    /// pause itself (nobody had asked for one).
    pub(super) async fn pause_verified(
        &mut self,
        reason: String,
        first: impl FnOnce(i64, bool) -> Vec<audit::Event> + Send + 'static,
    ) -> Result<DriveOutcome> {
        let seq = self
            .write_checkpoint(Level::Task, format!("paused: {reason}"))
            .await?;
        self.e.verify_checkpoint(self.run, seq).await?;
        let run = self.run;
        let said = reason.clone();
        let change = Change::default().announcing(Box::new(move |applied| {
            let by_worker = applied.moved.is_some_and(|m| m.by_worker);
            let mut events = first(seq, by_worker);
            events.push(audit::Event::new(
                Actor::Harness,
                Some(run),
                ev::PausedAtSafePoint {
                    checkpoint: seq,
                    verified: true,
                    reason: said,
                },
            ));
            events
        }));
        let stop = Stop {
            transition: Transition::SafePoint(reason.clone()),
            state: RunState::Paused,
            message: reason.clone(),
            attempt: format!("paused: {reason}"),
        };
        self.stop(change, stop).await
    }
}
