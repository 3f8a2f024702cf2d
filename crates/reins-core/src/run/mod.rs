//! The run lifecycle as a pure table. No IO: the engine asks this module whether a move is legal and
//! then performs the guarded write itself.

use std::fmt;

use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum RunState {
    Queued,
    Running,
    AwaitingApproval,
    /// The agent asked the person a question (`ask_user`); `reins answer` carries the answer back.
    AwaitingInput,
    PauseRequested,
    Paused,
    /// Needs a human: outcome unknown, incompatible checkpoint, budget, I/O error.
    Suspended,
    /// It follows an agent that runs outside Reins (Claude Code in a terminal, through its hooks):
    /// nothing is in flight, and the run waits for the agent's next tool call.
    Attached,
    Succeeded,
    Failed,
    Cancelled,
}

impl RunState {
    pub const ALL: [RunState; 11] = [
        RunState::Queued,
        RunState::Running,
        RunState::AwaitingApproval,
        RunState::AwaitingInput,
        RunState::PauseRequested,
        RunState::Paused,
        RunState::Suspended,
        RunState::Attached,
        RunState::Succeeded,
        RunState::Failed,
        RunState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Queued => "queued",
            RunState::Running => "running",
            RunState::AwaitingApproval => "awaiting_approval",
            RunState::AwaitingInput => "awaiting_input",
            RunState::PauseRequested => "pause_requested",
            RunState::Paused => "paused",
            RunState::Suspended => "suspended",
            RunState::Attached => "attached",
            RunState::Succeeded => "succeeded",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunState::Succeeded | RunState::Failed | RunState::Cancelled
        )
    }

    /// Owned by a worker that is driving it.
    pub fn is_active(self) -> bool {
        matches!(self, RunState::Running | RunState::PauseRequested)
    }

    /// Waiting for a person to act (approve, answer, resolve, resume).
    pub fn needs_human(self) -> bool {
        matches!(
            self,
            RunState::AwaitingApproval
                | RunState::AwaitingInput
                | RunState::Suspended
                | RunState::Paused
        )
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What can happen to a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEvent {
    /// A worker claims a queued run.
    Start,
    /// The policy asked for a human review.
    AwaitApproval,
    /// The review was decided (approved, rejected or expired); the run is queued to carry it out.
    Decide,
    /// The agent asked the person a question.
    AwaitInput,
    /// The person answered; the run is queued to hand the answer to the agent.
    Answer,
    RequestPause,
    /// The worker reached a safe point and verified its checkpoint.
    ReachSafePoint,
    /// A person resumes a paused or suspended run; a worker will claim it again.
    Resume,
    Suspend,
    /// A transient failure: the worker lets go; the run is claimed again after a backoff.
    Retry,
    Succeed,
    Fail,
    Cancel,
    /// The agent outside Reins finished a tool call: the run waits for its next one.
    Detach,
}

impl RunEvent {
    pub const ALL: [RunEvent; 14] = [
        RunEvent::Start,
        RunEvent::AwaitApproval,
        RunEvent::Decide,
        RunEvent::AwaitInput,
        RunEvent::Answer,
        RunEvent::RequestPause,
        RunEvent::ReachSafePoint,
        RunEvent::Resume,
        RunEvent::Suspend,
        RunEvent::Retry,
        RunEvent::Succeed,
        RunEvent::Fail,
        RunEvent::Cancel,
        RunEvent::Detach,
    ];
}

impl RunEvent {
    /// What the event does, for "run X is paused; it cannot start".
    pub fn verb(self) -> &'static str {
        match self {
            RunEvent::Start => "start",
            RunEvent::AwaitApproval => "wait for a review",
            RunEvent::Decide => "take a review decision",
            RunEvent::AwaitInput => "wait for an answer",
            RunEvent::Answer => "take an answer",
            RunEvent::RequestPause => "be paused",
            RunEvent::ReachSafePoint => "reach a safe point",
            RunEvent::Resume => "be resumed",
            RunEvent::Suspend => "be suspended",
            RunEvent::Retry => "be retried",
            RunEvent::Succeed => "succeed",
            RunEvent::Fail => "fail",
            RunEvent::Cancel => "be cancelled",
            RunEvent::Detach => "wait for the agent's next tool call",
        }
    }
}

use RunEvent as E;
use RunState as S;

/// Every legal move. Anything not listed is illegal.
const TABLE: &[(RunState, RunEvent, RunState)] = &[
    (S::Queued, E::Start, S::Running),
    (S::Queued, E::Cancel, S::Cancelled),
    // A queued run is at a safe point already: nothing runs, nothing to wait for.
    (S::Queued, E::RequestPause, S::Paused),
    (S::Running, E::AwaitApproval, S::AwaitingApproval),
    (S::Running, E::AwaitInput, S::AwaitingInput),
    (S::Running, E::RequestPause, S::PauseRequested),
    (S::Running, E::Suspend, S::Suspended),
    (S::Running, E::Retry, S::Queued),
    (S::Running, E::Succeed, S::Succeeded),
    (S::Running, E::Fail, S::Failed),
    (S::Running, E::Cancel, S::Cancelled),
    // The worker let go when it parked the step; whoever claims the run next carries the decision out.
    (S::AwaitingApproval, E::Decide, S::Queued),
    // Waiting for a review already is a safe point: pausing there needs no worker.
    (S::AwaitingApproval, E::RequestPause, S::Paused),
    (S::AwaitingApproval, E::Suspend, S::Suspended),
    (S::AwaitingApproval, E::Cancel, S::Cancelled),
    // Like a review: the worker let go when the agent asked; whoever claims the run next hands the
    // answer over. Waiting for it is a safe point.
    (S::AwaitingInput, E::Answer, S::Queued),
    (S::AwaitingInput, E::RequestPause, S::Paused),
    (S::AwaitingInput, E::Suspend, S::Suspended),
    (S::AwaitingInput, E::Cancel, S::Cancelled),
    (S::PauseRequested, E::ReachSafePoint, S::Paused),
    // The step the worker was finishing needs a review: waiting for it is the safe point.
    (S::PauseRequested, E::AwaitApproval, S::AwaitingApproval),
    (S::PauseRequested, E::AwaitInput, S::AwaitingInput),
    // The person withdraws the pause before the worker reached a safe point: it just goes on.
    (S::PauseRequested, E::Resume, S::Running),
    (S::PauseRequested, E::Suspend, S::Suspended),
    // Retrying a run someone asked to pause: it stops here instead (nothing in flight).
    (S::PauseRequested, E::Retry, S::Paused),
    (S::PauseRequested, E::Succeed, S::Succeeded),
    (S::PauseRequested, E::Fail, S::Failed),
    (S::PauseRequested, E::Cancel, S::Cancelled),
    (S::Paused, E::Resume, S::Queued),
    (S::Paused, E::Cancel, S::Cancelled),
    (S::Suspended, E::Resume, S::Queued),
    (S::Suspended, E::Cancel, S::Cancelled),
    // A run that follows an agent outside Reins: each tool call it asks about is a drive, claimed
    // by whoever hears it (the hook, or a worker carrying out a decision), that ends attached.
    (S::Running, E::Detach, S::Attached),
    (S::PauseRequested, E::Detach, S::Paused),
    (S::Attached, E::Start, S::Running),
    (S::Attached, E::RequestPause, S::Paused),
    (S::Attached, E::Succeed, S::Succeeded),
    (S::Attached, E::Cancel, S::Cancelled),
];

/// The state after `event`, or `None` when the move is illegal.
pub fn next(from: RunState, event: RunEvent) -> Option<RunState> {
    TABLE
        .iter()
        .find(|(f, e, _)| *f == from && *e == event)
        .map(|(_, _, to)| *to)
}
