//! The LLM agent: an OpenAI-compatible tool-calling loop whose every move goes through the harness.
//!
//! It keeps the calls still to make as plain data (serialised into every checkpoint) and the
//! conversation, with the steps it saw done, as an append-only history the harness writes into the
//! journal once; it proposes a model call when it needs the model, hands each tool call to the step
//! protocol one at a time, and answers the model's malformed or unknown calls itself with an error
//! the model can act on — a bounded number of times in a row before it gives up with a reason.

use std::collections::VecDeque;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Agent, AgentError, Conversation, ModelInput, Move, Observation, OffersTools, StepOutputs,
};
use crate::digest::Digest;
use crate::progress::Observer;
use crate::provider::{self, Completion, Message};
use crate::action::ToolCall;

mod excerpt;
mod prompt;
use excerpt::told;
pub use crate::context::working::{DoneStep, WorkingMemory};

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

pub use crate::action::ASK_USER;

/// What a run is created with: stored as its spec and hashed into its compatibility record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    pub goal: String,
    pub settings: provider::Settings,
    #[serde(default = "default_turns")]
    pub max_turns: u32,
    /// MCP servers whose tools the model is offered, as registered when the run was created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<crate::mcp::ServerSpec>,
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

    /// A run of the LLM agent with this spec, as it is created: its settings checked, and the keys
    /// it and its MCP servers are given named.
    pub fn new_run(&self) -> Result<super::NewRun, AgentError> {
        self.settings.check().map_err(AgentError::Invalid)?;
        let mcp_keys = self.mcp.iter().flat_map(|s| s.keys()).map(str::to_owned);
        Ok(super::NewRun {
            kind: KIND,
            version: VERSION,
            name: self.name.clone(),
            goal: self.goal.clone(),
            spec: self.to_json(),
            keys: self.settings.key.iter().cloned().chain(mcp_keys).collect(),
        })
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

/// What a checkpoint holds of the agent: bounded, whatever the length of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    /// The conversation, in checkpoints written before it moved to the history (schema 1): read,
    /// never written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    messages: Vec<Message>,
    pending: VecDeque<Pending>,
    in_flight: Option<Pending>,
    model_calls: u32,
    bad_replies: u32,
    last_bad: Option<String>,
    finished: Option<String>,
    failed: Option<String>,
    /// Without its `done` steps, which are in the history (older checkpoints had them here).
    working: WorkingMemory,
}

/// One entry of the agent's history, in the order they happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Entry {
    /// A message of the conversation after the system prompt and goal.
    Message(Message),
    /// A step it saw done, for its working memory.
    Done(DoneStep),
    /// The tool message telling the model what a step returned: the output is the step's result
    /// in the journal, so only the step and the output's digest are written here.
    Result(Seen),
}

/// A tool message made from a step's output (see [`Entry::Result`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Seen {
    /// The model's call it answers.
    id: String,
    step: i64,
    tool: String,
    ok: bool,
    /// The output's, checked when the history is read back.
    sha256: Digest,
}

pub struct LlmAgent {
    spec: Spec,
    state: State,
    /// The conversation, oldest first.
    messages: Vec<Message>,
    /// The steps it saw done, oldest first.
    done: Vec<DoneStep>,
    /// Whether each history entry, in order, was a message (else a done step).
    order: Vec<bool>,
    /// The messages made from a step's output, by their index in `messages`.
    seen: std::collections::BTreeMap<usize, Seen>,
    /// The earlier turns made into parts so far (not checkpointed: made again after a restore).
    earlier_turns: Vec<prompt::Earlier>,
    /// The tools the run's MCP servers offer in this attempt (not checkpointed: the harness offers
    /// them again, checked against the run's compatibility record).
    mcp: crate::mcp::Catalog,
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
            messages: Vec::new(),
            done: Vec::new(),
            order: Vec::new(),
            seen: Default::default(),
            earlier_turns: Vec::new(),
            mcp: crate::mcp::Catalog::default(),
        }
    }

    fn push_message(&mut self, message: Message) {
        self.messages.push(message);
        self.order.push(true);
    }

    fn push_done(&mut self, done: DoneStep) {
        self.done.push(done);
        self.order.push(false);
    }

    /// The working memory with the steps done.
    fn working(&self) -> WorkingMemory {
        WorkingMemory {
            done: self.done.clone(),
            ..self.state.working.clone()
        }
    }

    fn input(&mut self) -> ModelInput {
        // Each turn starts at an assistant reply.
        let turns: Vec<usize> = self
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == provider::Role::Assistant)
            .map(|(i, _)| i)
            .collect();
        ModelInput {
            settings: self.spec.settings.clone(),
            parts: prompt::parts(
                &self.spec,
                &self.messages,
                &turns,
                self.state.working.render_with(&self.done),
                &mut self.earlier_turns,
            ),
            tools: {
                let mut tools = prompt::tools();
                tools.extend(self.mcp.function_schemas());
                tools
            },
        }
    }

    /// Turns the model's calls into pending work; answers the malformed and unknown ones at once.
    fn take_calls(&mut self, calls: &[provider::ToolCall]) {
        let mut bad = Vec::new();
        for c in calls {
            let tool = if c.name == ASK_USER {
                Some(ASK_USER.to_owned())
            } else if self.mcp.by_function(&c.name).is_some() {
                Some(crate::action::mcp::TOOL.to_owned())
            } else {
                crate::action::tool_for_function(&c.name).map(str::to_owned)
            };
            let args = parse_args(&c.arguments);
            let problem = match (&tool, &args) {
                (None, _) => Some(format!(
                    "error: there is no tool named {:?}. The tools are: {}.",
                    c.name,
                    prompt::tool_names()
                        .into_iter()
                        .chain(self.mcp.tools.iter().map(|t| t.function.clone()))
                        .collect::<Vec<_>>()
                        .join(", ")
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
            self.push_message(Message::tool(id, text.clone()));
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

#[async_trait]
impl Agent for LlmAgent {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    async fn next(&mut self, _obs: &dyn Observer) -> Result<Move, AgentError> {
        if let Some(reason) = &self.state.failed {
            return Ok(Move::Fail {
                reason: reason.clone(),
            });
        }
        if let Some(p) = self.state.pending.pop_front() {
            // What is still queued after this call (the card says so): not the call itself.
            self.state.working.pending = self.state.pending.iter().map(|p| p.name.clone()).collect();
            let why = self.state.working.intent.clone();
            let args = p.args.clone().unwrap_or_default();
            let next = if p.tool.as_deref() == Some(ASK_USER) {
                let question = args["question"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| args.to_string());
                Move::Ask { question }
            } else if p.tool.as_deref() == Some(crate::action::mcp::TOOL) {
                // The server and tool the function stands for; the harness adds the rest.
                let (server, tool) = self
                    .mcp
                    .by_function(&p.name)
                    .map(|t| (t.server.clone(), t.tool.clone()))
                    .unwrap_or_else(|| (String::new(), p.name.clone()));
                Move::Call {
                    call: ToolCall {
                        tool: crate::action::mcp::TOOL.into(),
                        args: serde_json::json!({
                            "server": server, "tool": tool, "arguments": args,
                        }),
                    },
                    why,
                }
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
        self.seen.insert(
            self.messages.len(),
            Seen {
                id: p.id.clone(),
                step: obs.seq,
                tool: obs.tool.clone(),
                ok: obs.ok,
                sha256: Digest::of(obs.output.as_bytes()),
            },
        );
        self.push_message(Message::tool(&p.id, told(obs)));
        let status = if obs.ok { "ok" } else { "error" };
        let artifact = obs.artifact.as_ref().map(|d| d.to_string());
        self.push_done(DoneStep {
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

    fn state(&self) -> Value {
        serde_json::to_value(&self.state).unwrap_or_default()
    }

    fn restore(&mut self, state: &Value) -> Result<(), AgentError> {
        let mcp = std::mem::take(&mut self.mcp);
        *self = Self::new(self.spec.clone());
        self.mcp = mcp;
        if state.is_null() {
            return Ok(());
        }
        self.state =
            serde_json::from_value(state.clone()).map_err(|e| AgentError::State(e.to_string()))?;
        // A checkpoint of schema 1 holds the history itself: it becomes the history's first
        // entries (the harness writes them with the next checkpoint).
        for m in std::mem::take(&mut self.state.messages) {
            self.push_message(m);
        }
        for d in std::mem::take(&mut self.state.working.done) {
            self.push_done(d);
        }
        Ok(())
    }

    fn conversation(&mut self) -> Option<&mut dyn Conversation> {
        Some(self)
    }

    fn tools(&mut self) -> Option<&mut dyn OffersTools> {
        Some(self)
    }
}

impl Conversation for LlmAgent {
    fn reject_queued(&mut self, reason: &str) {
        for p in std::mem::take(&mut self.state.pending) {
            let said = format!("error: not run: the reviewer rejected it with the call before it: {reason}");
            self.push_message(Message::tool(&p.id, said));
        }
        self.state.working.pending.clear();
    }

    fn replied(&mut self, reply: &Completion) {
        self.state.model_calls += 1;
        self.push_message(Message {
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

    fn history_len(&self) -> usize {
        self.order.len()
    }

    fn history_since(&self, from: usize) -> Vec<Value> {
        let Some(rest) = self.order.get(from..) else {
            return Vec::new();
        };
        let before = self.order[..from].iter().filter(|m| **m).count();
        let (mut m, mut d) = (before, from - before);
        let mut out = Vec::with_capacity(rest.len());
        for &is_message in rest {
            let entry = if is_message {
                m += 1;
                match self.seen.get(&(m - 1)) {
                    Some(seen) => Some(Entry::Result(seen.clone())),
                    None => self.messages.get(m - 1).cloned().map(Entry::Message),
                }
            } else {
                d += 1;
                self.done.get(d - 1).cloned().map(Entry::Done)
            };
            out.extend(entry.and_then(|e| serde_json::to_value(e).ok()));
        }
        out
    }

    fn restore_history(
        &mut self,
        entries: Vec<Value>,
        outputs: &StepOutputs,
    ) -> Result<(), AgentError> {
        for (i, v) in entries.into_iter().enumerate() {
            match serde_json::from_value(v) {
                Ok(Entry::Message(m)) => self.push_message(m),
                Ok(Entry::Done(d)) => self.push_done(d),
                Ok(Entry::Result(seen)) => {
                    let obs = outputs
                        .observation(seen.step, &seen.tool, seen.ok)
                        .filter(|o| Digest::of(o.output.as_bytes()) == seen.sha256)
                        .ok_or_else(|| {
                            AgentError::State(format!(
                                "history entry {i}: the journal does not hold the output of step {} it saw",
                                seen.step
                            ))
                        })?;
                    let message = Message::tool(&seen.id, told(&obs));
                    self.seen.insert(self.messages.len(), seen);
                    self.push_message(message);
                }
                Err(e) => return Err(AgentError::State(format!("history entry {i}: {e}"))),
            }
        }
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
        Some(self.working())
    }
}

impl OffersTools for LlmAgent {
    fn mcp_servers(&self) -> Vec<crate::mcp::ServerSpec> {
        self.spec.mcp.clone()
    }

    fn offer_tools(&mut self, catalog: &crate::mcp::Catalog) {
        self.mcp = catalog.clone();
    }
}
