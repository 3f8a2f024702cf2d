//! Claude Code under Reins. Two ways in, one agent:
//! - **Its hooks**: Claude Code runs in the user's terminal, and before each tool call its
//!   `PreToolUse` hook (`reins hook claude-code`) asks Reins. The hook writes its request as a row
//!   of the session's run (`store::requests`); whoever drives the run hands it to this agent, which
//!   proposes it as an `agent.permission` step — judged as the action it reports, by the same
//!   classifier, rules, grants and reviews as any other — and the run goes back to waiting,
//!   attached, for the next one. The hook reads the step's outcome. `PostToolUse` is recorded as
//!   the agent's account of what happened.
//! - **Headless** (`reins run --claude GOAL`): this agent starts `claude -p` on its stream-json
//!   channel ([`headless`]) and the engine drives it like an ACP agent: a `can_use_tool` ask is a
//!   move, and the answer goes out in `observe`. Reins' own hook judges every call first, even
//!   those Claude Code would let through; its requests reach this agent as rows while it runs.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Account, Agent, AgentError, External, Move, NewRun, Observation, Services};
use crate::action::ToolCall;
use crate::progress::{Observer, Progress};

pub mod bypass;
mod confine;
mod headless;
pub mod hook;
pub mod link;
pub mod notebook;
pub mod settings;
pub mod stream;
pub mod transcript;

pub use headless::{held_elsewhere, AFTER_REVIEW, CARRIED_ENV, HEADLESS_ENV};

pub const KIND: &str = "claude-code";
pub const VERSION: &str = "1";

/// What a Claude Code run is created with: the session it follows and where it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    pub session_id: String,
    pub cwd: String,
    /// How Reins starts a headless session (`reins run --claude`); none for a session in the
    /// user's terminal, which only its hooks report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless: Option<Headless>,
}

/// What Reins needs to start a headless session, and to start it again once a person decided its
/// card: the program and the names of what it is given — never a key itself.
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
    /// The session exists already (`reins run --resume`): it is started with `--resume`.
    #[serde(default)]
    pub resumed: bool,
    /// The task, for a new session.
    #[serde(default)]
    pub goal: String,
    /// Folders the person let it write besides its own state and the workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_write: Vec<std::path::PathBuf>,
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

    /// The session's run as it is created, if none of it is open.
    pub fn new_run(&self) -> NewRun {
        NewRun {
            kind: KIND,
            version: VERSION,
            name: Self::run_name(&self.session_id),
            goal: format!("Claude Code session {} in {}", self.session_id, self.cwd),
            spec: self.to_json(),
            keys: self
                .headless
                .iter()
                .flat_map(|h| h.env.values().cloned())
                .collect(),
        }
    }
}

/// A headless session to start or resume (`reins run --claude GOAL`, `--resume SESSION`).
#[derive(Clone, Debug, Default)]
pub struct Start {
    /// The task; required for a new session, and what a resumed one is told next.
    pub goal: Option<String>,
    /// The session to resume.
    pub resume: Option<String>,
    /// The `claude` program [default: `claude` on PATH].
    pub program: Option<std::path::PathBuf>,
    /// Environment variables set from the keyring: variable → key name.
    pub env: std::collections::BTreeMap<String, String>,
    /// Environment variables passed through from Reins' own environment, by name.
    pub pass_env: Vec<String>,
    /// How long one permission ask waits for a decision before it is denied.
    pub review_deadline: Option<std::time::Duration>,
    /// Folders the person lets it write besides its own state and the workspace (absolute).
    pub may_write: Vec<std::path::PathBuf>,
}

impl Start {
    /// The session's spec in `cwd` (a folder already opened), and what a resumed session is told
    /// next, if anything.
    pub fn spec(self, cwd: &std::path::Path) -> Result<(Spec, Option<Request>), AgentError> {
        let session = match &self.resume {
            Some(id) => {
                if id.is_empty()
                    || id.len() > 200
                    || !id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(AgentError::Invalid(format!(
                        "{id:?} is not a Claude Code session id"
                    )));
                }
                id.clone()
            }
            None => uuid::Uuid::new_v4().to_string(),
        };
        let goal = self.goal.filter(|g| !g.trim().is_empty());
        if goal.is_none() && self.resume.is_none() {
            return Err(AgentError::Invalid("give Claude Code a goal".into()));
        }
        let asked = self.program.unwrap_or_else(|| "claude".into());
        // A session resumed keeps the program it was started with; a new one must find its own.
        let path = std::env::var_os("PATH");
        let program = match crate::process::find_program(&asked.to_string_lossy(), path.as_deref()) {
            Some(found) => found,
            None if self.resume.is_some() => asked,
            None => {
                return Err(AgentError::Invalid(format!(
                    "Claude Code (`{}`) is not installed here: `npm i -g @anthropic-ai/claude-code`, or say --claude-program PATH",
                    asked.display()
                )))
            }
        };
        let told = match (&self.resume, &goal) {
            (Some(_), Some(text)) => Some(Request::Prompt { text: text.clone() }),
            _ => None,
        };
        let spec = Spec {
            session_id: session,
            cwd: cwd.to_string_lossy().into_owned(),
            headless: Some(Headless {
                program: program.to_string_lossy().into_owned(),
                env: self.env,
                pass_env: self.pass_env,
                review_deadline_s: self.review_deadline.map(|d| d.as_secs()),
                resumed: self.resume.is_some(),
                goal: goal.unwrap_or_default(),
                may_write: self.may_write,
            }),
        };
        Ok((spec, told))
    }
}

/// What a hook, or Reins itself, hands the session's run.
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
    /// The session's turn ended: the run finishes with Claude Code's last words, and the turn's
    /// token usage goes on the record.
    End {
        ok: bool,
        summary: String,
        usage: Value,
    },
    /// What a headless session is told when it is started again (`reins run --resume` with a
    /// new task).
    Prompt { text: String },
}

/// The decision on a call a hook asked: the same call asked again on a headless session's own
/// channel (after the hook answered "ask") is answered with it, not decided twice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Answered {
    /// The step that decided it.
    seq: i64,
    /// The call's arguments (`kind`, `title`, `rawInput`).
    args: Value,
    allow: bool,
    /// Why, for the model (a denial's reason).
    reason: String,
    /// The tool's input as a person edited it.
    input: Option<Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct State {
    /// The request being decided; proposed again by whoever carries its decision out.
    pending: Option<Request>,
    /// How many tool calls were decided in this session.
    decided: u64,
    /// The headless channel's ask the pending call came from (its `request_id`), answered in
    /// `observe`; none for a hook's.
    #[serde(default)]
    channel: Option<String>,
    /// The last decision on a hook's call, for the channel's ask of the same call.
    #[serde(default)]
    answered: Option<Answered>,
    /// A headless session was started (later starts resume it).
    #[serde(default)]
    started: bool,
    /// What to tell a headless session when it is started again, if not the default.
    #[serde(default)]
    prompt: Option<String>,
    /// Claude Code's last words, for a turn that ends without any.
    #[serde(default)]
    said: String,
}

pub struct ClaudeAgent {
    spec: Spec,
    services: Option<Services>,
    state: State,
    accounts: Vec<Account>,
    /// A headless session's process, while it lives in this process.
    live: Option<headless::Live>,
    /// Kept for this run's next attempt in this process (set when the run waits for a person).
    keep: bool,
    /// A process started and not yet reported to the harness (which records it for recovery).
    started: Option<(u32, String)>,
    /// The answer to a headless ask, sent once its step is committed ([`External::deliver`]): a
    /// crash before then leaves the call unanswered, to be asked and decided again, never carried
    /// out on a decision the journal does not hold.
    outbox: Option<(String, Answered)>,
}

impl ClaudeAgent {
    /// The session's agent; `services` are what a headless session needs to start Claude Code.
    pub fn new(spec: Spec, services: Option<Services>) -> Self {
        Self {
            spec,
            services,
            state: State::default(),
            accounts: Vec::new(),
            live: None,
            keep: false,
            started: None,
            outbox: None,
        }
    }

    /// The decision `o` as the agent hears it: allowed (with the input as a person edited it), or
    /// refused with the reason.
    fn answered(&self, o: &Observation, args: &Value) -> Answered {
        let edited = o
            .ran
            .as_ref()
            .map(|ran| &ran["rawInput"])
            .filter(|ran| !ran.is_null() && **ran != args["rawInput"])
            .cloned();
        Answered {
            seq: o.seq,
            args: args.clone(),
            allow: o.ok,
            reason: o.output.clone(),
            input: edited,
        }
    }
}

/// The `what` of a `PostToolUse` record in `agent.reported`.
pub const TOOL_RESULT: &str = "tool_result";

#[async_trait]
impl Agent for ClaudeAgent {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    async fn next(&mut self, obs: &dyn Observer) -> Result<Move, AgentError> {
        match &self.state.pending {
            Some(Request::Pre { call, why, .. }) => {
                return Ok(Move::Call {
                    call: call.clone(),
                    why: why.clone(),
                })
            }
            Some(Request::End { ok: true, summary, .. }) => {
                return Ok(Move::Finish {
                    summary: summary.clone(),
                })
            }
            Some(Request::End { summary, .. }) => {
                return Ok(Move::Fail {
                    reason: format!("Claude Code's turn ended in an error: {summary}"),
                })
            }
            Some(Request::Post { .. } | Request::Said { .. } | Request::Prompt { .. }) | None => {}
        }
        if self.spec.headless.is_none() {
            return Ok(Move::Detach);
        }
        self.next_headless(obs).await
    }

    fn observe(&mut self, observation: &Observation) {
        let Some(Request::Pre { call, .. }) = self.state.pending.take() else {
            return;
        };
        self.state.decided += 1;
        let answered = self.answered(observation, &call.args);
        match self.state.channel.take() {
            Some(request_id) if self.adopt() => self.outbox = Some((request_id, answered)),
            // The hook that asked reads the step; a headless Claude Code may ask again on its
            // channel. (A session in a terminal has no channel: nothing to keep.)
            _ if self.spec.headless.is_some() => self.state.answered = Some(answered),
            _ => {}
        }
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

#[async_trait]
impl External for ClaudeAgent {
    async fn interrupt(&mut self) {}

    fn deliver(&mut self) {
        if let Some((request_id, answered)) = self.outbox.take() {
            crate::fault_point!("before_answer");
            if let Some(live) = &self.live {
                live.answer(&request_id, &answered);
            }
        }
    }

    fn keep_alive(&mut self) {
        self.keep = true;
    }

    fn take_started(&mut self) -> Option<(u32, String)> {
        self.started.take()
    }

    fn take_accounts(&mut self) -> Vec<Account> {
        std::mem::take(&mut self.accounts)
    }

    fn runs_outside(&self) -> bool {
        true
    }

    /// A headless session is Reins' own process; one in a terminal is the person's.
    fn watched(&self) -> bool {
        self.spec.headless.is_some()
    }

    fn review_deadline(&self) -> Option<std::time::Duration> {
        let secs = self.spec.headless.as_ref()?.review_deadline_s?;
        Some(std::time::Duration::from_secs(secs))
    }

    fn wants_request(&self) -> bool {
        !matches!(
            self.state.pending,
            Some(Request::Pre { .. } | Request::End { .. })
        )
    }

    fn take_request(&mut self, request: &Value) -> Result<(), AgentError> {
        let request: Request = serde_json::from_value(request.clone())
            .map_err(|e| AgentError::State(format!("a hook's request cannot be read: {e}")))?;
        if !self.wants_request() {
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
            Request::Prompt { text } => self.state.prompt = Some(text),
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
            pre @ Request::Pre { .. } => {
                // A new call: an earlier decision no longer answers the channel.
                self.state.answered = None;
                self.state.channel = None;
                self.state.pending = Some(pre);
            }
        }
        Ok(())
    }
}

impl Drop for ClaudeAgent {
    /// A run waiting for a person keeps a headless session's process for its next attempt here;
    /// otherwise the process and everything it started end with the attempt.
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            match &self.services {
                Some(s) if self.keep => s.sessions.keep(s.run, Box::new(live)),
                _ => drop(live),
            }
        }
    }
}

/// Tells the person watching what Claude Code said.
fn tell(obs: &dyn Observer, text: &str) {
    obs.on(&Progress::Text {
        text: format!("{}\n", text.trim_end()),
    });
}

#[cfg(test)]
mod tests;
