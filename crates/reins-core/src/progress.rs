//! What a drive tells whoever watches it, and where it leaves the run.

use serde::Serialize;

use crate::checkpoint::DamageKind;
use crate::ids::RunId;
use crate::run::RunState;
use crate::step::StepStatus;

/// Something worth telling the person watching a run.
#[derive(Clone, Debug, Serialize)]
#[serde(
    tag = "event",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Progress {
    Created {
        run: RunId,
        name: String,
        workspace: String,
    },
    Attempt {
        run: RunId,
        attempt: i64,
        fence: i64,
        adopted: bool,
        resumed_from: Option<i64>,
    },
    Damage {
        seq: i64,
        kind: DamageKind,
    },
    Recovered {
        attempt: i64,
        changed_outside: usize,
        text: String,
        /// Nothing happened but a review: the run simply goes on after a person's decision.
        after_review: Option<i64>,
        /// Nothing happened but a question: the run goes on with the person's answer.
        after_answer: Option<i64>,
    },
    Settled {
        step: i64,
        tool: String,
        how: String,
    },
    Step {
        seq: i64,
        tool: String,
        status: StepStatus,
        why: Option<String>,
        summary: String,
        checkpoint: i64,
        reused: bool,
    },
    Waiting {
        state: RunState,
        reason: String,
    },
    /// A model call began.
    Thinking {
        seq: i64,
        model: String,
        /// Tokens of context sent, and the input budget.
        tokens: usize,
        budget: usize,
    },
    /// Text the model is streaming, as it arrives.
    Text {
        text: String,
    },
    Finished {
        state: RunState,
        summary: String,
    },
}

pub trait Observer: Send + Sync {
    fn on(&self, progress: &Progress);
}

/// An observer that ignores everything.
pub struct Silent;

impl Observer for Silent {
    fn on(&self, _: &Progress) {}
}

/// Where a drive left the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "outcome",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum DriveOutcome {
    Finished {
        state: RunState,
        summary: String,
    },
    NeedsHuman {
        state: RunState,
        reason: String,
    },
    /// Another worker owns the run now, or a person changed its state.
    Lost {
        reason: String,
    },
    /// A transient failure: the run was let go and is claimed again at `at` (Unix ms).
    Retrying {
        at: i64,
        reason: String,
    },
    /// Not claimed: the run is finished, waits for a human, or another worker holds it.
    Skipped {
        state: RunState,
        reason: String,
    },
}
