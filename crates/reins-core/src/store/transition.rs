//! How a change moves its run (`Transition`), applied after its rows, checkpoint and events, in the
//! change's one transaction.

use super::write::of_run;
use super::{intents, runs, Result, StoreError, Tx};
use crate::ids::RunId;
use crate::run::{RunEvent, RunState};

/// How a change moves its run, applied after its rows, checkpoint and events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    /// These lifecycle events in order; `reason` becomes the run's last error (None clears it).
    Moves(Vec<RunEvent>, Option<String>),
    /// The worker stops at a safe point: after a person's pause request, or — nobody asked, the
    /// worker is draining — it requests the pause itself first.
    SafePoint(String),
    /// A decision was recorded: a run waiting for it is queued to carry it out; one that is not
    /// (paused meanwhile) stays as it is.
    Decided,
    /// The last unsettled effect of a suspended run was decided: it is queued again.
    ResumeWhenSettled,
}

/// Where a transition left the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    pub from: RunState,
    pub to: RunState,
    /// `SafePoint`: the worker requested the pause itself (it is draining).
    pub by_worker: bool,
}

/// Applies `t` to `run` in `tx`; with `fence`, on behalf of the worker holding it.
pub async fn transition(
    tx: &mut Tx,
    run: Option<RunId>,
    fence: Option<i64>,
    t: &Transition,
    now: i64,
) -> Result<Moved> {
    let run = of_run(run)?;
    match t {
        Transition::Moves(events, reason) => {
            let mut moved: Option<Moved> = None;
            for event in events {
                let (from, to, _) =
                    runs::advance(tx, run, fence, *event, reason.as_deref(), now).await?;
                moved = Some(Moved {
                    from: moved.map_or(from, |m| m.from),
                    to,
                    by_worker: false,
                });
            }
            moved.ok_or_else(|| StoreError::Invalid("a transition needs at least one event".into()))
        }
        Transition::SafePoint(reason) => {
            match runs::advance(tx, run, fence, RunEvent::ReachSafePoint, Some(reason), now).await {
                Ok((from, to, _)) => Ok(Moved {
                    from,
                    to,
                    by_worker: false,
                }),
                Err(StoreError::Illegal {
                    from: RunState::Running,
                    ..
                }) => {
                    runs::advance(tx, run, fence, RunEvent::RequestPause, None, now).await?;
                    let (_, to, _) =
                        runs::advance(tx, run, fence, RunEvent::ReachSafePoint, Some(reason), now)
                            .await?;
                    Ok(Moved {
                        from: RunState::Running,
                        to,
                        by_worker: true,
                    })
                }
                Err(e) => Err(e),
            }
        }
        Transition::Decided => {
            let state = runs::state(tx, run).await?;
            if state == RunState::AwaitingApproval {
                let (from, to, _) =
                    runs::advance(tx, run, None, RunEvent::Decide, None, now).await?;
                return Ok(Moved {
                    from,
                    to,
                    by_worker: false,
                });
            }
            Ok(Moved {
                from: state,
                to: state,
                by_worker: false,
            })
        }
        Transition::ResumeWhenSettled => {
            let state = runs::state(tx, run).await?;
            if state == RunState::Suspended && intents::count_unsettled(tx, run).await? == 0 {
                let (from, to, _) =
                    runs::advance(tx, run, None, RunEvent::Resume, None, now).await?;
                return Ok(Moved {
                    from,
                    to,
                    by_worker: false,
                });
            }
            Ok(Moved {
                from: state,
                to: state,
                by_worker: false,
            })
        }
    }
}
