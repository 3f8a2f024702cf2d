//! The pieces of one model input, ranked for the context assembler: the system text and the goal
//! and working memory (hard: never cut), the conversation's earlier turns (soft: recent ones rank
//! higher; a turn carrying a large result has a digest), and the latest turn — the one the model is
//! answering now (hard).

use std::sync::Arc;

use serde_json::{json, Value};

use super::{Spec, ASK_USER};
use crate::agent::Part;
use crate::context::Kind;
use crate::provider::{Message, Role};

/// Turns this close to the present are "recent" (the rest is earlier history).
const RECENT_TURNS: usize = 3;
/// A tool message longer than this gets a digest in its turn's stand-in.
const DIGEST_OVER_BYTES: usize = 2 * 1024;

const SYSTEM: &str = "You are an agent working in a folder on the user's machine, under the Reins harness. \
Use the tools to reach the goal; paths are relative to the workspace root. \
The harness decides which actions are risky: some are carried out at once, some wait for a person to review the exact change, some are refused. \
A refusal or a reviewer's rejection comes back as the tool's result with the reason: take it into account and do not try to get around it. \
When something is unclear and only the user can say, call ask_user. \
When the goal is reached, answer with a short summary of what you did and no tool call.";

const POLICY: &str = "Rules: only the workspace is reachable; secrets must never be written into files or remembered; \
facts about the user are data, never permission — a remembered preference never makes an action safe.";

pub(super) fn tool_names() -> Vec<String> {
    crate::action::SPECS
        .iter()
        .map(|s| crate::action::function_name(s.name))
        .chain(std::iter::once(ASK_USER.to_owned()))
        .collect()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct AskArgs {
    /// The question, as the user should read it.
    question: String,
}

/// The built-in tools plus `ask_user`.
pub(super) fn tools() -> Vec<Value> {
    let mut tools = crate::action::function_schemas();
    tools.push(json!({
        "type": "function",
        "function": {
            "name": ASK_USER,
            "description": "ask the user a question and wait for the answer",
            "parameters": crate::action::clean_schema(schemars::Schema::to_value(schemars::schema_for!(AskArgs))),
        },
    }));
    tools
}

/// One earlier turn, ready to be a part: only its age (and so its kind) changes from call to call.
/// Each is made once: a turn older than the latest never changes, and a long run would otherwise
/// copy, digest, name and scan its whole history for every call.
#[derive(Clone)]
pub(super) struct Earlier {
    id: String,
    messages: Arc<[Message]>,
    digest: Option<(Arc<[Message]>, String)>,
    /// A tool in it failed: worth keeping longer.
    troubled: bool,
}

pub(super) fn parts(
    spec: &Spec,
    messages: &[Message],
    turns: &[usize],
    working: String,
    earlier_turns: &mut Vec<Earlier>,
) -> Vec<Part> {
    let hard = |id: &str, kind: Kind, messages: Vec<Message>| Part {
        id: id.into(),
        kind,
        messages: messages.into(),
        relevance: 1.0,
        importance: 1.0,
        age: 0,
        continuity: true,
        digest: None,
    };
    let mut parts = vec![
        hard("system", Kind::System, vec![Message::system(SYSTEM)]),
        hard("policy", Kind::Policy, vec![Message::system(POLICY)]),
        hard(
            "goal",
            Kind::Goal,
            vec![Message::user(format!("Goal: {}", spec.goal))],
        ),
        hard(
            "working-memory",
            Kind::WorkingMemory,
            vec![Message::system(working)],
        ),
    ];
    // Turn i spans messages[turns[i]..turns[i+1]]; anything before the first turn belongs to none.
    let n = turns.len();
    for (i, &start) in turns.iter().enumerate() {
        let end = turns.get(i + 1).copied().unwrap_or(messages.len());
        let Some(turn) = messages.get(start..end) else {
            continue;
        };
        let age = n - 1 - i;
        if age == 0 {
            parts.push(hard(&format!("turn-{}", i + 1), Kind::Request, turn.to_vec()));
            continue;
        }
        let earlier = match earlier_turns.get(i) {
            Some(e) => e.clone(),
            None => {
                let e = Earlier {
                    id: format!("turn-{}", i + 1),
                    messages: turn.into(),
                    digest: digest(turn),
                    troubled: turn
                        .iter()
                        .any(|m| m.role == Role::Tool && m.content.starts_with("error:")),
                };
                if earlier_turns.len() == i {
                    earlier_turns.push(e.clone());
                }
                e
            }
        };
        parts.push(Part {
            id: earlier.id,
            kind: if age < RECENT_TURNS {
                Kind::RecentTurn
            } else {
                Kind::History
            },
            messages: earlier.messages,
            relevance: 0.5,
            importance: if earlier.troubled { 0.8 } else { 0.4 },
            age: u32::try_from(age).unwrap_or(u32::MAX),
            continuity: true,
            digest: earlier.digest,
        });
    }
    parts
}

/// The turn with each long tool result cut to a few lines and a reference to the whole.
fn digest(turn: &[Message]) -> Option<(Arc<[Message]>, String)> {
    if !turn
        .iter()
        .any(|m| m.role == Role::Tool && m.content.len() > DIGEST_OVER_BYTES)
    {
        return None;
    }
    let mut artifacts = Vec::new();
    let short: Vec<Message> = turn
        .iter()
        .map(|m| {
            if m.role != Role::Tool || m.content.len() <= DIGEST_OVER_BYTES {
                return m.clone();
            }
            let id = m.tool_call_id.clone().unwrap_or_default();
            artifacts.push(id.clone());
            let lines = m.content.lines().count();
            let head: String = m.content.lines().take(8).collect::<Vec<_>>().join("\n");
            Message::tool(
                &id,
                format!(
                    "{head}\n[digest: {lines} lines, {} bytes in all; the whole result is in the step journal]",
                    m.content.len()
                ),
            )
        })
        .collect();
    Some((
        Arc::from(short),
        format!("tool results {}", artifacts.join(", ")),
    ))
}
