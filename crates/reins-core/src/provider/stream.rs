//! Reading a streamed `/v1/chat/completions` answer (server-sent events, parsed by
//! `eventsource-stream`): text deltas are handed on as they arrive, tool-call deltas are put
//! together by their index (the id and name come once, the arguments in pieces), and the stream must
//! end properly — `[DONE]` or a finish reason — or it is an error, never a half answer.

use std::collections::BTreeMap;

use eventsource_stream::Eventsource as _;
use futures_util::{Stream, StreamExt as _};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StreamError {
    #[error("the model's stream broke off: {0}")]
    Transport(String),
    #[error("the model sent a chunk that is not valid JSON: {0}")]
    Malformed(String),
    #[error("the model's stream ended before the answer did (no [DONE] and no finish reason)")]
    Unfinished,
    #[error("the model reported an error in its stream: {0}")]
    Remote(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// A tool call as the model finally sent it. `arguments` is the raw JSON text (it may be invalid:
/// the agent loop answers that with an error result, not a crash).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One whole answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// Puts an answer together from the `data` of each event.
#[derive(Debug, Default)]
pub struct Assembler {
    text: String,
    calls: BTreeMap<u32, ToolCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl Assembler {
    /// Takes one event's data; returns the new text, if any, to show as it arrives.
    pub fn push(&mut self, data: &str) -> Result<Option<String>, StreamError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        if data.is_empty() {
            return Ok(None);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            let head: String = data.chars().take(120).collect();
            StreamError::Malformed(format!("{e} in {head:?}"))
        })?;
        if let Some(err) = chunk.error {
            let message = err
                .get("message")
                .and_then(|m| m.as_str())
                .map_or_else(|| err.to_string(), str::to_owned);
            return Err(StreamError::Remote(message));
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(Usage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
            });
        }
        let mut new_text = String::new();
        // Only the first choice is asked for (n = 1).
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(t) = choice.delta.content {
                new_text.push_str(&t);
            }
            for d in choice.delta.tool_calls.unwrap_or_default() {
                let call = self.calls.entry(d.index).or_insert_with(|| ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                if let Some(id) = d.id.filter(|i| !i.is_empty()) {
                    call.id = id;
                }
                if let Some(f) = d.function {
                    if let Some(name) = f.name {
                        call.name.push_str(&name);
                    }
                    if let Some(args) = f.arguments {
                        call.arguments.push_str(&args);
                    }
                }
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        self.text.push_str(&new_text);
        Ok((!new_text.is_empty()).then_some(new_text))
    }

    /// The whole answer; an error when the stream never said it was finished.
    pub fn finish(self) -> Result<Completion, StreamError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(StreamError::Unfinished);
        }
        Ok(Completion {
            text: self.text,
            tool_calls: self
                .calls
                .into_values()
                .enumerate()
                .map(|(i, mut c)| {
                    if c.id.is_empty() {
                        // Some local servers send no ids; the loop needs one to answer each call.
                        c.id = format!("call_{i}");
                    }
                    c
                })
                .collect(),
            finish_reason: self.finish_reason,
            usage: self.usage,
        })
    }
}

/// Reads a whole streamed answer from the response body, calling `on_text` with each piece of text.
pub async fn collect<S, B, E>(
    body: S,
    mut on_text: impl FnMut(&str),
) -> Result<Completion, StreamError>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let mut events = body.eventsource();
    let mut answer = Assembler::default();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| StreamError::Transport(e.to_string()))?;
        if let Some(text) = answer.push(&event.data)? {
            on_text(&text);
        }
        if answer.done {
            break;
        }
    }
    answer.finish()
}

#[cfg(test)]
mod tests;
