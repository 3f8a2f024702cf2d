//! Claude Code under Reins, through its hooks: Claude Code runs in the user's terminal, and before
//! each tool call its `PreToolUse` hook (`reins hook claude-code`) asks Reins. The session is a run
//! of this kind with no loop of its own: each hook hands its request to a drive of the run
//! (an offer), the agent proposes it as an `agent.permission` step — judged as the
//! action it reports, by the same classifier, rules, grants and reviews as any other — and the run
//! goes back to waiting, attached, for the next one. `PostToolUse` is recorded as the agent's
//! account of what happened.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Account, Agent, AgentError, External, Move, Observation};
use crate::progress::Observer;
use crate::action::ToolCall;

pub mod hook;
pub mod notebook;
pub mod settings;
pub mod stream;
pub mod transcript;

pub const KIND: &str = "claude-code";
pub const VERSION: &str = "1";

/// What a Claude Code run is created with: the session it follows and where it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    pub session_id: String,
    pub cwd: String,
    /// How a headless session is started again (`reins run --claude`); none for a session in the
    /// user's terminal, which only its hooks report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless: Option<Headless>,
}

/// What a worker needs to start a headless session again once a person decided its card: the
/// program and the names of what it is given — never a key itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Headless {
    /// The `claude` program as it was found.
    pub program: String,
    /// Environment variables set from the keyring: variable → key name.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Environment variables passed through from the environment of whoever starts it.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// How long one ask waits for a decision, in seconds.
    #[serde(default)]
    pub review_deadline_s: Option<u64>,
}

impl Spec {
    pub fn from_json(text: &str) -> Result<Self, AgentError> {
        serde_json::from_str(text).map_err(|e| AgentError::Plan {
            origin: "(stored)".into(),
            detail: e.to_string(),
        })
    }

    pub fn to_json(&self) -> String {
        let mut spec = serde_json::json!({"sessionId": self.session_id, "cwd": self.cwd});
        if let Some(headless) = &self.headless {
            spec["headless"] = serde_json::to_value(headless).unwrap_or(Value::Null);
        }
        spec.to_string()
    }

    /// The run's name: how a later hook of the same session finds it.
    pub fn run_name(session_id: &str) -> String {
        format!("Claude Code session {session_id}")
    }
}

/// What a hook hands the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "hook"
)]
pub enum Request {
    /// `PreToolUse`: the tool call to decide, as an `agent.permission` call, and the context.
    Pre {
        tool_use_id: String,
        call: ToolCall,
        why: Option<String>,
    },
    /// `PostToolUse`: what happened, for the record.
    Post { detail: Value },
    /// The model's words between tool calls (a headless session's), for the timeline.
    Said { text: String },
    /// The session's turn ended (headless): the run finishes with Claude Code's last words, and
    /// the turn's token usage goes on the record.
    End {
        ok: bool,
        summary: String,
        usage: Value,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct State {
    /// The request being decided; proposed again by whoever carries its decision out.
    pending: Option<Request>,
    /// How many tool calls were decided in this session.
    decided: u64,
}

pub struct HookedAgent {
    state: State,
    accounts: Vec<Account>,
}

impl HookedAgent {
    /// The session's agent: it knows nothing but the request it is handed (the spec names the
    /// session, for people and for finding the run).
    pub fn new(_spec: Spec) -> Self {
        Self {
            state: State::default(),
            accounts: Vec::new(),
        }
    }
}

/// The `what` of a `PostToolUse` record in `agent.reported`.
pub const TOOL_RESULT: &str = "tool_result";

#[async_trait]
impl Agent for HookedAgent {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    async fn next(&mut self, _obs: &dyn Observer) -> Result<Move, AgentError> {
        Ok(match &self.state.pending {
            Some(Request::Pre { call, why, .. }) => Move::Call {
                call: call.clone(),
                why: why.clone(),
            },
            Some(Request::End { ok: true, summary, .. }) => Move::Finish {
                summary: summary.clone(),
            },
            Some(Request::End { summary, .. }) => Move::Fail {
                reason: format!("Claude Code's turn ended in an error: {summary}"),
            },
            Some(Request::Post { .. } | Request::Said { .. }) | None => Move::Detach,
        })
    }

    fn observe(&mut self, _observation: &Observation) {
        self.state.pending = None;
        self.state.decided += 1;
    }

    fn state(&self) -> Value {
        serde_json::to_value(&self.state).unwrap_or(Value::Null)
    }

    fn restore(&mut self, state: &Value) -> Result<(), AgentError> {
        // A new run's first checkpoint holds no agent state yet.
        if state.is_null() {
            self.state = State::default();
            return Ok(());
        }
        self.state = serde_json::from_value(state.clone())
            .map_err(|e| AgentError::State(format!("Claude Code session state: {e}")))?;
        Ok(())
    }

    fn external(&mut self) -> Option<&mut dyn External> {
        Some(self)
    }
}

impl External for HookedAgent {
    fn runs_outside(&self) -> bool {
        true
    }

    fn take_accounts(&mut self) -> Vec<Account> {
        std::mem::take(&mut self.accounts)
    }

    fn take_request(&mut self, request: &Value) -> Result<(), AgentError> {
        let request: Request = serde_json::from_value(request.clone())
            .map_err(|e| AgentError::State(format!("a hook's request cannot be read: {e}")))?;
        if let Some(Request::Pre { .. }) = &self.state.pending {
            return Err(AgentError::State(
                "the session's run is still deciding another tool call".into(),
            ));
        }
        match request {
            Request::Post { detail } => self.accounts.push(Account::Update {
                what: TOOL_RESULT,
                detail,
            }),
            Request::Said { text } => self.accounts.extend(Account::message(&text)),
            Request::End { ok, summary, usage } => {
                if !usage.is_null() {
                    self.accounts.push(Account::Update {
                        what: "usage",
                        detail: usage,
                    });
                }
                self.state.pending = Some(Request::End {
                    ok,
                    summary,
                    usage: Value::Null,
                });
            }
            pre => self.state.pending = Some(pre),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pre() -> Value {
        json!({"hook": "pre", "toolUseId": "t1", "why": "because",
            "call": {"tool": "agent.permission", "args": {"kind": "read", "title": "Read"}}})
    }

    #[tokio::test]
    async fn an_offered_call_is_proposed_until_it_is_observed_then_the_agent_detaches() {
        let mut a = HookedAgent::new(Spec { session_id: "s".into(), cwd: "/w".into(), headless: None });
        assert_eq!(a.next(&crate::progress::Silent).await.ok(), Some(Move::Detach));
        a.take_request(&pre()).unwrap_or_else(|e| panic!("{e}"));
        // Proposed again after a restore (a decision carried out by another process).
        let saved = a.state();
        let mut b = HookedAgent::new(Spec { session_id: "s".into(), cwd: "/w".into(), headless: None });
        b.restore(&saved).unwrap_or_else(|e| panic!("{e}"));
        for agent in [&mut a, &mut b] {
            assert!(matches!(agent.next(&crate::progress::Silent).await, Ok(Move::Call { .. })));
            assert!(agent.take_request(&pre()).is_err(), "a second call while one is decided");
            agent.observe(&Observation { seq: 2, tool: "agent.permission".into(), ok: true, output: String::new(), artifact: None });
            assert_eq!(agent.next(&crate::progress::Silent).await.ok(), Some(Move::Detach));
        }
    }

    #[tokio::test]
    async fn a_post_tool_use_is_an_account_and_no_step() {
        let mut a = HookedAgent::new(Spec { session_id: "s".into(), cwd: "/w".into(), headless: None });
        a.take_request(&json!({"hook": "post", "detail": {"tool": "Write", "ok": true}}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.next(&crate::progress::Silent).await.ok(), Some(Move::Detach));
        assert_eq!(a.take_accounts().len(), 1);
        assert!(a.take_request(&json!({"hook": "other"})).is_err());
        assert!(a.restore(&json!({"pending": null, "decided": 1, "extra": 1})).is_err());
    }
}
