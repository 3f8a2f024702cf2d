//! The LLM agent: an OpenAI-compatible tool-calling loop whose every move goes through the harness.
//!
//! It keeps the conversation and the calls still to make as plain data (serialised into every
//! checkpoint), proposes a model call when it needs the model, hands each tool call to the step
//! protocol one at a time, and answers the model's malformed or unknown calls itself with an error
//! the model can act on — a bounded number of times in a row before it gives up with a reason.

use std::collections::VecDeque;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Agent, AgentError, ModelInput, Move, Observation};
use crate::provider::{self, Completion, Message};
use crate::tools::ToolCall;

mod prompt;
mod working;
pub use working::{DoneStep, WorkingMemory};

#[cfg(test)]
mod tests;

pub const KIND: &str = "llm";
pub const VERSION: &str = "1";

/// Replies in a row whose tool calls were all malformed or unknown before the run fails.
pub const MAX_BAD_REPLIES: u32 = 3;
/// Most model calls one run makes.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// A tool result longer than this reaches the model as its head and tail plus a reference to the
/// whole, which the harness kept as an artifact in the blob store (and the step journal has).
pub const RESULT_EXCERPT_BYTES: usize = crate::agent::ARTIFACT_BYTES;

/// The pseudo-tool the model uses to ask the person something.
pub const ASK_USER: &str = "ask_user";

/// What a run is created with: stored as its spec and hashed into its compatibility record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    pub goal: String,
    pub settings: provider::Settings,
    #[serde(default = "default_turns")]
    pub max_turns: u32,
}

fn default_turns() -> u32 {
    DEFAULT_MAX_TURNS
}

impl Spec {
    pub fn from_json(text: &str) -> Result<Self, AgentError> {
        serde_json::from_str(text).map_err(|e| AgentError::Plan {
            origin: "(stored llm spec)".into(),
            detail: e.to_string(),
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A call the model made, waiting to be handed to the harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pending {
    id: String,
    /// The built-in tool, `ask_user`, or None when the model named no known tool.
    tool: Option<String>,
    name: String,
    /// Parsed arguments, or why they could not be parsed.
    args: Result<Value, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    /// The conversation after the system prompt and goal, oldest first.
    messages: Vec<Message>,
    /// Index in `messages` of each assistant reply (a turn starts there).
    turns: Vec<usize>,
    pending: VecDeque<Pending>,
    in_flight: Option<Pending>,
    model_calls: u32,
    bad_replies: u32,
    last_bad: Option<String>,
    finished: Option<String>,
    failed: Option<String>,
    working: WorkingMemory,
}

pub struct LlmAgent {
    spec: Spec,
    state: State,
}

impl LlmAgent {
    pub fn new(spec: Spec) -> Self {
        let working = WorkingMemory {
            goal: spec.goal.clone(),
            ..WorkingMemory::default()
        };
        Self {
            spec,
            state: State {
                working,
                ..State::default()
            },
        }
    }

    fn input(&self) -> ModelInput {
        ModelInput {
            settings: self.spec.settings.clone(),
            parts: prompt::parts(
                &self.spec,
                &self.state.messages,
                &self.state.turns,
                &self.state.working,
            ),
            tools: prompt::tools(),
        }
    }

    /// Turns the model's calls into pending work; answers the malformed and unknown ones at once.
    fn take_calls(&mut self, calls: &[provider::ToolCall]) {
        let mut bad = Vec::new();
        for c in calls {
            let tool = if c.name == ASK_USER {
                Some(ASK_USER.to_owned())
            } else {
                crate::tools::tool_for_function(&c.name).map(str::to_owned)
            };
            let args = parse_args(&c.arguments);
            let problem = match (&tool, &args) {
                (None, _) => Some(format!(
                    "error: there is no tool named {:?}. The tools are: {}.",
                    c.name,
                    prompt::tool_names().join(", ")
                )),
                (Some(_), Err(e)) => Some(format!(
                    "error: the arguments of {} are not a JSON object ({e}). Call it again with valid JSON arguments.",
                    c.name
                )),
                _ => None,
            };
            match problem {
                Some(text) => bad.push((c.id.clone(), text)),
                None => self.state.pending.push_back(Pending {
                    id: c.id.clone(),
                    tool,
                    name: c.name.clone(),
                    args,
                }),
            }
        }
        let all_bad = !calls.is_empty() && bad.len() == calls.len();
        for (id, text) in &bad {
            self.state.messages.push(Message::tool(id, text.clone()));
            self.state.last_bad = Some(text.clone());
        }
        if all_bad {
            self.state.bad_replies += 1;
            if self.state.bad_replies >= MAX_BAD_REPLIES {
                self.state.failed = Some(format!(
                    "the model sent only malformed or unknown tool calls {} times in a row; last: {}",
                    self.state.bad_replies,
                    self.state.last_bad.as_deref().unwrap_or("")
                ));
            }
        } else if !calls.is_empty() {
            self.state.bad_replies = 0;
        }
    }
}

fn parse_args(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!("got {}", kind_of(&other))),
        Err(e) => Err(e.to_string()),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Head and tail of a long result, with where the whole is.
pub fn excerpt(text: &str, seq: i64, artifact: Option<&str>) -> String {
    if text.len() <= RESULT_EXCERPT_BYTES {
        return text.to_owned();
    }
    let whole = match artifact {
        Some(a) => {
            format!("artifact {a} in the blob store; `reins show RUN --step {seq}` prints it")
        }
        None => format!("`reins show RUN --step {seq}` prints it"),
    };
    let head = floor(text, RESULT_EXCERPT_BYTES * 3 / 4);
    let tail_start = ceil(text, text.len() - RESULT_EXCERPT_BYTES / 4);
    format!(
        "{}\n[… {} bytes omitted; the whole output is kept: {whole} …]\n{}",
        &text[..head],
        tail_start - head,
        &text[tail_start..]
    )
}

fn floor(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[async_trait]
impl Agent for LlmAgent {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    async fn next(&mut self) -> Result<Move, AgentError> {
        if let Some(reason) = &self.state.failed {
            return Ok(Move::Fail {
                reason: reason.clone(),
            });
        }
        if let Some(p) = self.state.pending.pop_front() {
            let why = self.state.working.intent.clone();
            let args = p.args.clone().unwrap_or_default();
            let next = if p.tool.as_deref() == Some(ASK_USER) {
                let question = args["question"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| args.to_string());
                Move::Ask { question }
            } else {
                Move::Call {
                    call: ToolCall {
                        tool: p.tool.clone().unwrap_or_else(|| p.name.clone()),
                        args,
                    },
                    why,
                }
            };
            self.state.in_flight = Some(p);
            return Ok(next);
        }
        if let Some(answer) = &self.state.finished {
            return Ok(Move::Finish {
                summary: answer.clone(),
            });
        }
        if self.state.model_calls >= self.spec.max_turns {
            return Ok(Move::Fail {
                reason: format!(
                    "the model was called {} times without finishing (the run's limit)",
                    self.state.model_calls
                ),
            });
        }
        Ok(Move::Think(self.input()))
    }

    fn observe(&mut self, obs: &Observation) {
        let Some(p) = self.state.in_flight.take() else {
            return;
        };
        let status = if obs.ok { "ok" } else { "error" };
        let artifact = obs.artifact.as_ref().map(|d| d.to_string());
        let cut = excerpt(&obs.output, obs.seq, artifact.as_deref());
        let content = if obs.ok { cut } else { format!("error: {cut}") };
        self.state.messages.push(Message::tool(&p.id, content));
        self.state.working.done.push(DoneStep {
            step: obs.seq,
            tool: obs.tool.clone(),
            status: status.into(),
            summary: obs
                .output
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(160)
                .collect(),
            artifact,
        });
        self.state.working.pending = self.state.pending.iter().map(|p| p.name.clone()).collect();
    }

    fn replied(&mut self, reply: &Completion) {
        self.state.model_calls += 1;
        self.state.turns.push(self.state.messages.len());
        self.state.messages.push(Message {
            role: provider::Role::Assistant,
            content: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
            tool_call_id: None,
        });
        let said = reply.text.trim();
        // The reason shown for this reply's calls: its own words, never an earlier reply's.
        self.state.working.intent = (!said.is_empty()).then(|| said.chars().take(300).collect());
        if reply.tool_calls.is_empty() {
            self.state.finished = Some(if said.is_empty() {
                "the model finished without a final message".into()
            } else {
                said.to_owned()
            });
            return;
        }
        self.take_calls(&reply.tool_calls);
        self.state.working.pending = self.state.pending.iter().map(|p| p.name.clone()).collect();
    }

    fn state(&self) -> Value {
        serde_json::to_value(&self.state).unwrap_or_default()
    }

    fn restore(&mut self, state: &Value) -> Result<(), AgentError> {
        if state.is_null() {
            *self = Self::new(self.spec.clone());
            return Ok(());
        }
        self.state =
            serde_json::from_value(state.clone()).map_err(|e| AgentError::State(e.to_string()))?;
        Ok(())
    }

    fn recovered(&mut self, summary: &crate::resume::RecoverySummary) {
        // Going on after a review or an answer is no interruption worth telling the model about.
        let plain_continue = summary.current_step.is_some()
            && summary.settled.is_empty()
            && summary.ended_processes.is_empty()
            && summary.changed_outside.is_empty();
        if plain_continue {
            return;
        }
        // Only the latest resume matters; older notes describe a past that is in the steps now.
        self.state.working.notes = vec![format!("Resumed after an interruption. {}", summary.text)];
    }

    fn working_memory(&self) -> Option<WorkingMemory> {
        Some(self.state.working.clone())
    }
}
