//! The agent's session updates: its messages stream to whoever watches, and its account of its own
//! work — tool calls as their status changes, its plan, token usage, mode changes — goes on the
//! run's timeline. Reins also keeps, per tool call, whether the agent asked before it: a tool call
//! that changes things (an edit, a delete, a move, a command) reported done without a permission
//! request or a request to Reins is an effect outside Reins' sight, and the run stops there.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::handshake::UNSAFE_MODES;
use crate::agent::Account;

/// The agent's tool kinds that change things: done without asking, they stop the run.
const EFFECT_KINDS: &[&str] = &["edit", "delete", "move", "execute"];
/// The agent's tool kinds that read: done without asking, they stop the run when what they read
/// is a file Reins keeps from agents, or when what they report back holds a secret.
const READ_KINDS: &[&str] = &["read", "search"];
/// Characters of a tool call's reported content kept on the timeline.
const MAX_CONTENT: usize = 500;
/// Tool calls remembered (the oldest are forgotten; their updates are still recorded).
const MAX_CALLS: usize = 256;

/// A tool call the agent reported, as far as Reins has seen it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Call {
    kind: String,
    title: String,
    status: String,
    /// The agent asked Reins before it: a permission request for it, or a write or a command
    /// Reins carried out while it was in progress.
    asked: bool,
    order: u64,
}

/// What Reins has seen of the agent's tool calls (checkpointed with the agent's state), by a
/// digest of the agent's id for each: ids are the agent's random strings, which a checkpoint must
/// not keep looking like secrets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Calls {
    calls: BTreeMap<String, Call>,
    seen: u64,
}

fn key(id: &str) -> String {
    crate::digest::Digest::of(id.as_bytes()).short().to_owned()
}

/// What one update amounts to, besides its text.
#[derive(Debug, PartialEq)]
pub(super) enum Seen {
    Nothing,
    /// A message chunk: text for the watcher and the run's summary.
    Text(String),
    Record(Account),
    /// The agent acted without asking (or put itself in a mode where it does not ask): record
    /// these, then stop the run with `reason`.
    Stop {
        accounts: Vec<Account>,
        reason: String,
    },
}

impl Calls {
    /// The title the agent gave tool call `id` when it reported it, if it did.
    pub(super) fn title(&self, id: &str) -> Option<&str> {
        self.calls
            .get(&key(id))
            .map(|c| c.title.as_str())
            .filter(|t| !t.is_empty())
    }

    /// The agent asked permission for tool call `id`.
    pub(super) fn asked(&mut self, id: &str) {
        self.entry(id).asked = true;
    }

    /// The agent asked Reins for a write or a command: it belongs to the tool call in progress.
    pub(super) fn asked_for_latest(&mut self) {
        if let Some(c) = self
            .calls
            .values_mut()
            .filter(|c| !is_final(&c.status))
            .max_by_key(|c| c.order)
        {
            c.asked = true;
        }
    }

    fn entry(&mut self, id: &str) -> &mut Call {
        let id = &key(id);
        if !self.calls.contains_key(id) && self.calls.len() >= MAX_CALLS {
            if let Some(oldest) = self
                .calls
                .iter()
                .min_by_key(|(_, c)| c.order)
                .map(|(k, _)| k.clone())
            {
                self.calls.remove(&oldest);
            }
        }
        self.seen += 1;
        let order = self.seen;
        self.calls.entry(id.to_owned()).or_insert_with(|| Call {
            order,
            ..Call::default()
        })
    }

    /// One `session/update` (its `update` as JSON).
    pub(super) fn on_update(&mut self, v: &Value) -> Seen {
        let kind = v.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
        match kind {
            "agent_message_chunk" => v["content"]
                .get("text")
                .and_then(Value::as_str)
                .map_or(Seen::Nothing, |t| Seen::Text(t.to_owned())),
            "tool_call" | "tool_call_update" => self.on_tool_call(v),
            "plan" => Seen::Record(Account::Update {
                what: "plan",
                detail: json!({"entries": v.get("entries").cloned().unwrap_or(Value::Null)}),
            }),
            "usage_update" => Seen::Record(Account::Update {
                what: "usage",
                detail: v.clone(),
            }),
            "current_mode_update" => {
                let mode = v
                    .get("currentModeId")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let account = Account::Update {
                    what: "mode",
                    detail: json!({ "mode": mode }),
                };
                if UNSAFE_MODES.contains(&mode.as_str()) {
                    Seen::Stop {
                        accounts: vec![account],
                        reason: format!(
                            "the agent switched itself to mode {mode:?}, in which it decides risk itself; Reins stopped the run"
                        ),
                    }
                } else {
                    Seen::Record(account)
                }
            }
            // Thoughts, command lists and the rest: the watcher does not need them, the timeline
            // would only grow.
            _ => Seen::Nothing,
        }
    }

    fn on_tool_call(&mut self, v: &Value) -> Seen {
        let Some(id) = v.get("toolCallId").and_then(Value::as_str) else {
            return Seen::Nothing;
        };
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let call = self.entry(id);
        if let Some(k) = text("kind") {
            call.kind = k;
        }
        if let Some(t) = text("title") {
            call.title = t.chars().take(200).collect();
        }
        let first = v.get("sessionUpdate").and_then(Value::as_str) == Some("tool_call");
        // ACP: a new tool call with no status is pending.
        let status = text("status").unwrap_or_else(|| {
            if first && call.status.is_empty() {
                "pending".into()
            } else {
                call.status.clone()
            }
        });
        let read = READ_KINDS.contains(&call.kind.as_str()) && !call.asked;
        if let Some(what) = read.then(|| revealed(v)).flatten() {
            let account = Account::Unasked {
                tool_call: key(id),
                kind: call.kind.clone(),
                title: call.title.clone(),
            };
            return Seen::Stop {
                accounts: vec![account],
                reason: format!(
                    "the agent's own {:?} tool ({}) {what} without asking Reins; the run stops so you can look. Configure the agent to ask before every tool (docs/agents.md)",
                    call.kind, call.title
                ),
            };
        }
        if status == call.status && !first {
            // A progress update with the same status (streamed output): not a new fact.
            return Seen::Nothing;
        }
        call.status = status.clone();
        let call = call.clone();
        let account = Account::Update {
            what: "tool_call",
            detail: json!({
                "id": key(id),
                "kind": call.kind,
                "title": call.title,
                "status": status,
                "content": content_text(v.get("content")),
            }),
        };
        if status == "completed" && EFFECT_KINDS.contains(&call.kind.as_str()) && !call.asked {
            let unasked = Account::Unasked {
                tool_call: key(id),
                kind: call.kind.clone(),
                title: call.title.clone(),
            };
            return Seen::Stop {
                accounts: vec![account, unasked],
                reason: format!(
                    "the agent ran its {:?} tool ({}) without asking Reins; the run stops so you can look. Configure the agent to ask before every tool (docs/agents.md)",
                    call.kind, call.title
                ),
            };
        }
        Seen::Record(account)
    }
}

/// What an unasked read reached that Reins keeps from agents: a secret file it names, or a secret
/// in what it reports back.
fn revealed(v: &Value) -> Option<String> {
    let named = crate::action::permission::reported_path(v);
    let locations = v["locations"].as_array().into_iter().flatten();
    let paths = named
        .into_iter()
        .chain(locations.filter_map(|l| l["path"].as_str().map(str::to_owned)));
    for path in paths {
        if let Some(why) = crate::policy::protected::secret_path(std::path::Path::new(&path)) {
            return Some(format!("read {path} ({why})"));
        }
    }
    let text: String = v["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["content"]["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    crate::secrets::contains(&text).then(|| "returned what holds a secret".to_owned())
}

fn is_final(status: &str) -> bool {
    matches!(status, "completed" | "failed")
}

/// The text of a tool call's reported content (text blocks and diffs' paths), cut short.
fn content_text(content: Option<&Value>) -> String {
    let Some(items) = content.and_then(Value::as_array) else {
        return String::new();
    };
    let mut out = String::new();
    for c in items {
        match c.get("type").and_then(Value::as_str) {
            Some("diff") => {
                let path = c.get("path").and_then(Value::as_str).unwrap_or("");
                out.push_str(&format!("[diff of {path}] "));
            }
            Some("terminal") => out.push_str("[terminal] "),
            _ => {
                if let Some(t) = c["content"].get("text").and_then(Value::as_str) {
                    out.push_str(t);
                    out.push(' ');
                }
            }
        }
    }
    let out = out.trim_end();
    let cut: String = out.chars().take(MAX_CONTENT).collect();
    crate::secrets::redact(&cut).into_owned()
}

/// The most of the agent's current message kept (in memory and in its checkpointed state): more
/// than the timeline shows and the summary uses; an agent that floods gets no further.
pub(super) const MAX_SAID: usize = 4 * crate::agent::MAX_MESSAGE;

/// Appends `text` to `to` up to `cap` bytes, cut at a character boundary; one `…` marks the cut.
pub(super) fn push_capped(to: &mut String, text: &str, cap: usize) {
    if to.len() >= cap {
        return;
    }
    let room = cap - to.len();
    if text.len() <= room {
        to.push_str(text);
        return;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    to.push_str(&text[..end]);
    to.push('…');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(kind: &str, id: &str, status: &str, tool: &str) -> Value {
        json!({"sessionUpdate": kind, "toolCallId": id, "status": status, "kind": tool, "title": "write"})
    }

    #[test]
    fn an_edit_done_without_asking_stops_the_run_and_one_asked_for_does_not() {
        let mut calls = Calls::default();
        // opencode with its default permissions: it writes itself and says so.
        calls.on_update(&update("tool_call", "a", "pending", "edit"));
        calls.on_update(&update("tool_call_update", "a", "in_progress", "edit"));
        let seen = calls.on_update(&json!({"sessionUpdate": "tool_call_update", "toolCallId": "a", "status": "completed"}));
        assert!(matches!(seen, Seen::Stop { .. }), "{seen:?}");

        // Asked through a permission request: recorded, not stopped.
        calls.on_update(&update("tool_call", "b", "pending", "edit"));
        calls.asked("b");
        let seen = calls.on_update(&update("tool_call_update", "b", "completed", "edit"));
        assert!(matches!(seen, Seen::Record(_)), "{seen:?}");

        // Asked by writing through Reins while it was in progress.
        calls.on_update(&update("tool_call", "c", "in_progress", "execute"));
        calls.asked_for_latest();
        let seen = calls.on_update(&update("tool_call_update", "c", "completed", "execute"));
        assert!(matches!(seen, Seen::Record(_)), "{seen:?}");

        // A read done alone is the agent's business; a failed edit changed nothing.
        calls.on_update(&update("tool_call", "d", "pending", "read"));
        let seen = calls.on_update(&update("tool_call_update", "d", "completed", "read"));
        assert!(matches!(seen, Seen::Record(_)), "{seen:?}");
        calls.on_update(&update("tool_call", "e", "pending", "edit"));
        let seen = calls.on_update(&update("tool_call_update", "e", "failed", "edit"));
        assert!(matches!(seen, Seen::Record(_)), "{seen:?}");
    }

    #[test]
    fn an_unasked_read_of_a_secret_file_or_that_returns_a_secret_stops_the_run() {
        let mut calls = Calls::default();
        let read = json!({"sessionUpdate": "tool_call", "toolCallId": "r", "kind": "read", "title": "ReadFile",
            "locations": [{"path": "/ws/config/.env.production"}]});
        let Seen::Stop { reason, .. } = calls.on_update(&read) else { panic!("a read of an environment file") };
        assert!(reason.contains("read /ws/config/.env.production (an environment file"), "{reason}");

        let search = json!({"sessionUpdate": "tool_call", "toolCallId": "s", "kind": "search", "title": "grep_search",
            "rawInput": {"pattern": "AWS", "path": "/ws"}});
        assert!(matches!(calls.on_update(&search), Seen::Record(_)));
        let found = json!({"sessionUpdate": "tool_call_update", "toolCallId": "s", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text",
                "text": "File: .env\nL1: AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}}]});
        let Seen::Stop { reason, .. } = calls.on_update(&found) else { panic!("a search that returned a key") };
        assert!(reason.contains("returned what holds a secret"), "{reason}");

        // Asked first: the person or the policy decided it.
        calls.on_update(&json!({"sessionUpdate": "tool_call", "toolCallId": "t", "kind": "read", "title": "ReadFile"}));
        calls.asked("t");
        let asked = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed",
            "locations": [{"path": "/ws/.env"}]});
        assert!(matches!(calls.on_update(&asked), Seen::Record(_)));
    }

    #[test]
    fn streamed_progress_is_not_recorded_twice_and_text_streams() {
        let mut calls = Calls::default();
        assert!(matches!(calls.on_update(&update("tool_call", "a", "in_progress", "read")), Seen::Record(_)));
        assert_eq!(calls.on_update(&update("tool_call_update", "a", "in_progress", "read")), Seen::Nothing);
        assert_eq!(
            calls.on_update(&json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})),
            Seen::Text("hi".into())
        );
        assert_eq!(calls.on_update(&json!({"sessionUpdate": "available_commands_update"})), Seen::Nothing);
    }

    #[test]
    fn a_switch_to_a_mode_where_the_agent_decides_stops_the_run() {
        let mut calls = Calls::default();
        let seen = calls.on_update(&json!({"sessionUpdate": "current_mode_update", "currentModeId": "yolo"}));
        assert!(matches!(seen, Seen::Stop { .. }), "{seen:?}");
        let seen = calls.on_update(&json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}));
        assert!(matches!(seen, Seen::Record(_)), "{seen:?}");
    }

    #[test]
    fn the_calls_remembered_are_bounded() {
        let mut calls = Calls::default();
        for n in 0..(MAX_CALLS + 50) {
            calls.on_update(&update("tool_call", &n.to_string(), "pending", "read"));
        }
        assert_eq!(calls.calls.len(), MAX_CALLS);
    }
}

#[cfg(test)]
mod capped {
    use super::push_capped;

    #[test]
    fn a_flood_stops_at_the_cap_on_a_character_boundary() {
        let mut said = String::new();
        push_capped(&mut said, "héllo ", 8);
        // One byte of room, and ö takes two: cut before it.
        push_capped(&mut said, "öx", 8);
        assert_eq!(said, "héllo …");
        push_capped(&mut said, "more", 8);
        assert_eq!(said, "héllo …", "nothing more once full");
    }
}
