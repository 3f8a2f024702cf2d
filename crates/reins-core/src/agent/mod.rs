//! Agents reason; the harness owns the loop. An agent proposes the next move, is told what happened,
//! and can serialise its state into a checkpoint and be restored from one.

use async_trait::async_trait;
use serde::Serialize;

use crate::tools::ToolCall;

pub mod script;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("plan {origin}: {detail}")]
    Plan { origin: String, detail: String },
    #[error("unknown agent kind {0:?}")]
    UnknownKind(String),
    #[error("cannot restore agent state: {0}")]
    State(String),
}

/// What the agent wants next.
#[derive(Clone, Debug, PartialEq)]
pub enum Move {
    Call { call: ToolCall, why: Option<String> },
    Finish { summary: String },
    Fail { reason: String },
}

/// The result of one step, as the agent sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Observation {
    pub seq: i64,
    pub tool: String,
    pub ok: bool,
    pub output: String,
}

#[async_trait]
pub trait Agent: Send + Sync {
    fn kind(&self) -> &'static str;
    fn version(&self) -> &'static str;
    async fn next(&mut self) -> Result<Move, AgentError>;
    /// Called with the outcome of the call `next` proposed, before the step's checkpoint is written.
    fn observe(&mut self, observation: &Observation);
    fn state(&self) -> serde_json::Value;
    fn restore(&mut self, state: &serde_json::Value) -> Result<(), AgentError>;
    /// Told once when a run resumes, before the agent proposes anything: what was done, what was
    /// settled and what changed meanwhile. An LLM agent puts it in its context.
    fn recovered(&mut self, _summary: &crate::resume::RecoverySummary) {}
}

/// Builds the agent a run was created with, from its stored kind and spec.
pub fn build(kind: &str, spec: &str) -> Result<Box<dyn Agent>, AgentError> {
    match kind {
        script::KIND => Ok(Box::new(script::ScriptAgent::new(script::Plan::from_json(
            spec,
        )?))),
        other => Err(AgentError::UnknownKind(other.to_owned())),
    }
}
