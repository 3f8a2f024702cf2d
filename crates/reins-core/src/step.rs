//! A step: one thing an agent did or proposed in a run (a tool call, a model call, a question to
//! the person), and where it stands. Steps are numbered by the run's step clock; the `steps` table
//! keeps every one, so a resumed run reuses what is recorded instead of doing it again.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum StepKind {
    /// A tool call through the step protocol.
    ToolCall,
    /// A request to the model (the LLM agent).
    ModelCall,
    /// `ask_user`: the agent asked the person something.
    Question,
    /// Reins briefed an external agent: its goal and the profile facts it may use.
    Prompt,
}

/// How an external agent's brief step reads on the timeline and on review cards.
pub fn brief_summary(facts: u64) -> String {
    match facts {
        0 => "briefed the agent: its goal".into(),
        1 => "briefed the agent: its goal and 1 profile fact".into(),
        n => format!("briefed the agent: its goal and {n} profile facts"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum StepStatus {
    /// Its effect's intent is written; the effect is running (or a crash interrupted it).
    Running,
    Done,
    /// It ran and failed, or failed before its effect (planning, resolving a host).
    Failed,
    /// The proposal did not validate (schema, size, path jail); nothing ran.
    Invalid,
    /// The policy denied it; nothing ran.
    Denied,
    /// Parked at a review checkpoint.
    AwaitingReview,
    /// The reviewer rejected it; nothing ran.
    Rejected,
    /// The review expired; nothing ran.
    Expired,
    /// A person decided not to run an effect whose outcome was unknown.
    Skipped,
    /// Nobody can say whether its effect happened; a person decides.
    Unknown,
    /// A question waits for the person's answer.
    AwaitingInput,
    /// The person answered the question.
    Answered,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Running => "running",
            StepStatus::Done => "done",
            StepStatus::Failed => "failed",
            StepStatus::Invalid => "invalid",
            StepStatus::Denied => "denied",
            StepStatus::AwaitingReview => "awaiting_review",
            StepStatus::Rejected => "rejected",
            StepStatus::Expired => "expired",
            StepStatus::Skipped => "skipped",
            StepStatus::Unknown => "unknown",
            StepStatus::AwaitingInput => "awaiting_input",
            StepStatus::Answered => "answered",
        }
    }

    /// A recorded outcome a resumed run may hand to the agent again instead of re-running the step.
    pub fn is_reusable(self) -> bool {
        matches!(
            self,
            StepStatus::Done
                | StepStatus::Failed
                | StepStatus::Invalid
                | StepStatus::Denied
                | StepStatus::Skipped
                | StepStatus::Rejected
                | StepStatus::Expired
        )
    }
}

impl std::fmt::Display for StepStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A step's summary for people: the first line, at most 200 characters.
pub fn one_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}
