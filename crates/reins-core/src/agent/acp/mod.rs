//! External agents over the Agent Client Protocol: Reins is the client, the agent a child process.
//! Control is inverted — the agent pushes requests — and each one that does something becomes a
//! move of this agent, so it goes through the same step protocol as the built-in tools:
//! `fs/write_text_file` is `fs.write`, `fs/read_text_file` is `fs.read`, `terminal/create` is
//! `shell.exec`, and `session/request_permission` is `agent.permission`, judged as the action the
//! agent reports. The answer to each request is the step's outcome. A write that follows an
//! approved permission is bound to it (same path, same content) and not reviewed twice.
//!
//! The process cannot be checkpointed. While its run waits for a person in this process it stays
//! alive in [`Sessions`]; anywhere else a new process is started, with `session/load` when the
//! agent supports it, and told what happened meanwhile.

use std::collections::BTreeMap;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    ContentBlock, PromptRequest, SessionNotification, TextContent,
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Account, Agent, AgentError, Conversation, External, Move, Observation};
use crate::progress::{Observer, Progress};
use crate::ids::RunId;

mod cancel;
pub mod confine;
mod handshake;
pub mod known;
#[cfg(any(test, feature = "internals"))]
mod landing;
mod requests;
pub mod session;
mod spend;
mod updates;
pub(in crate::agent) mod vendors;
#[cfg(any(test, feature = "internals"))]
pub use landing::Landed;
use super::Services;
pub use requests::Handled;
use requests::{Asked, Permitted, Terminal};
use session::{Incoming, Process};
use updates::Seen;

pub const KIND: &str = "acp";
/// 2: the agent's state keeps its tool calls; its identity went to the compat record.
pub const VERSION: &str = "2";

/// Seconds without a word from the agent, mid-turn, before the run is suspended.
pub const DEFAULT_IDLE_TIMEOUT_S: u64 = 600;
/// Prompts Reins sends after the first to carry a reviewer's reasons back to the agent.
const MAX_FOLLOW_UPS: u32 = 5;
/// What an agent's message is reported as on the run's timeline (`agent.reported`).
pub const MESSAGE: &str = "message";

/// What an ACP run is created with: stored as its spec. Secrets are named, never held.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    pub goal: String,
    /// The agent's program and arguments, run without a shell.
    pub command: Vec<String>,
    /// Environment variables set from the keyring: variable → key name.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Environment variables passed through from Reins' own environment, by name.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Places the person let this agent write besides its own state (absolute; the workspace
    /// among them lets it write the workspace minus the protected paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_write: Vec<std::path::PathBuf>,
    /// The registered agent the command came from, if any.
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default = "default_idle")]
    pub idle_timeout_s: u64,
}

fn default_idle() -> u64 {
    DEFAULT_IDLE_TIMEOUT_S
}

impl Spec {
    pub fn from_json(text: &str) -> Result<Self, AgentError> {
        let spec: Self = serde_json::from_str(text).map_err(|e| AgentError::Plan {
            origin: "(stored acp spec)".into(),
            detail: e.to_string(),
        })?;
        if spec.command.first().is_none_or(|p| p.is_empty()) {
            return Err(AgentError::Plan {
                origin: "(stored acp spec)".into(),
                detail: "the agent's command is empty".into(),
            });
        }
        Ok(spec)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A run of this agent, as it is created, with the keys it is given named.
    pub fn new_run(&self) -> super::NewRun {
        super::NewRun {
            kind: KIND,
            version: VERSION,
            name: self.name.clone(),
            goal: self.goal.clone(),
            spec: self.to_json(),
            keys: self.env.values().cloned().collect(),
        }
    }
}

pub use crate::action::mcp::MEMORY_SERVER_NAME;

/// How an external agent starts Reins' memory server (`reins mcp serve --run RUN`).
impl super::ReinsProgram {
    /// The session's `mcpServers` entry for run `run`.
    pub fn for_run(
        &self,
        run: RunId,
        link: Option<&crate::mcp::link::Link>,
    ) -> agent_client_protocol::v1::schema::McpServer {
        use agent_client_protocol::v1::schema::{EnvVariable, McpServer, McpServerStdio};
        if let Some(link) = link {
            // A confined agent cannot open the store: its server is a relay to this Reins.
            let args = vec![
                "mcp".to_owned(),
                "relay".to_owned(),
                "--port".to_owned(),
                link.port.to_string(),
            ];
            let env = vec![EnvVariable::new(
                crate::mcp::link::TOKEN_ENV,
                link.token.clone(),
            )];
            return McpServer::Stdio(
                McpServerStdio::new(MEMORY_SERVER_NAME, self.program.clone())
                    .args(args)
                    .env(env),
            );
        }
        let args = vec![
            "--data-dir".to_owned(),
            self.data_dir.to_string_lossy().into_owned(),
            "mcp".to_owned(),
            "serve".to_owned(),
            "--run".to_owned(),
            run.to_string(),
        ];
        let env = vec![EnvVariable::new(
            crate::data_dir::CONFIG_DIR_ENV,
            self.config_dir.to_string_lossy(),
        )];
        McpServer::Stdio(
            McpServerStdio::new(MEMORY_SERVER_NAME, self.program.clone())
                .args(args)
                .env(env),
        )
    }
}

/// The agent's checkpointed state: everything but the process.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    #[serde(with = "agent_issued")]
    session: Option<String>,
    /// Prompts sent (the first carries the goal).
    prompts: u32,
    /// The first prompt as the harness assembled it (the goal and the profile facts): sent again
    /// as the first prompt of a new session.
    #[serde(default)]
    brief: Option<String>,
    asked: Option<Asked>,
    permitted: Vec<Permitted>,
    terminals: BTreeMap<String, Terminal>,
    /// What the agent must hear with its next prompt: reviewers' reasons, a recovery summary.
    tell: Vec<String>,
    /// The agent's last message, for the run's summary.
    said: String,
    /// The last message ended (a tool call came after it): the next chunk starts a new one.
    said_ended: bool,
    /// The last message was already given as the reason for a request (a later request is not
    /// given it again as its own).
    #[serde(default)]
    said_given: bool,
    /// A prompt turn is open (its end not yet seen).
    in_turn: bool,
    /// The agent's tool calls, and whether it asked before each.
    calls: updates::Calls,
}

/// An identifier the agent issued (its session id), kept hex-encoded in the checkpoint: it is an
/// identifier, not a secret, and a random look must not read as one. A real secret's format still
/// shows through the encoding to the secret scan, and is sealed.
mod agent_issued {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(id: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => s.serialize_some(&hex::encode(id)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let Some(text) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        let bytes = hex::decode(&text).map_err(serde::de::Error::custom)?;
        String::from_utf8(bytes)
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

/// The process and session of a run, while they live.
pub struct Live {
    process: Process,
    session: String,
    /// The request the harness is deciding, answered when its step is done.
    responder: std::sync::Mutex<Option<cancel::Pending>>,
}

pub struct AcpAgent {
    spec: Spec,
    services: Services,
    state: State,
    live: Option<Live>,
    /// The refusals from the agent's stderr already accounted as blocked.
    blocked_seen: std::collections::BTreeSet<String>,
    /// Kept alive for this run's next attempt in this process (set when the run waits for a person).
    keep: bool,
    /// A process started and not yet reported to the harness (which records it for recovery).
    started: Option<(u32, String)>,
    /// What the agent reported since the harness last asked, for the run's timeline.
    accounts: Vec<Account>,
    /// The answer to the request whose step is done, sent once that step is committed.
    /// (A mutex: a responder is `Send` but not `Sync`.)
    outbox: std::sync::Mutex<Option<requests::Outgoing>>,
}

impl AcpAgent {
    pub fn new(spec: Spec, services: Services) -> Self {
        Self {
            spec,
            services,
            state: State::default(),
            live: None,
            blocked_seen: Default::default(),
            keep: false,
            started: None,
            accounts: Vec::new(),
            outbox: std::sync::Mutex::new(None),
        }
    }

    /// The live process: adopted from this process's sessions, or started (and its session
    /// loaded or created).
    async fn live(&mut self) -> Result<&mut Live, String> {
        self.adopt();
        if self.live.is_none() {
            let live = self.start().await?;
            self.live = Some(live);
        }
        self.live.as_mut().ok_or_else(|| "no agent process".to_owned())
    }

    /// Takes this run's process over from the sessions kept here, if it is the one this state
    /// belongs to (otherwise it ends).
    fn adopt(&mut self) {
        if self.live.is_none() {
            self.live = self
                .services
                .sessions
                .take::<Live>(self.services.run)
                .filter(|l| Some(&l.session) == self.state.session.as_ref());
        }
    }

    /// The goal as the agent's first prompt gives it, before the harness adds the facts.
    fn goal_text(&self) -> String {
        format!(
            "{}\n\n(You run under Reins: every file write and command goes through its review. If a request is refused you will be told why.)",
            self.spec.goal
        )
    }

    /// Sends the next prompt (the brief first, then what the agent must hear).
    fn prompt(&mut self) -> Result<(), String> {
        let text = if self.state.prompts == 0 {
            let mut t = self.state.brief.clone().unwrap_or_else(|| self.goal_text());
            for extra in self.state.tell.drain(..) {
                t.push_str("\n\n");
                t.push_str(&extra);
            }
            t
        } else {
            self.state.tell.drain(..).collect::<Vec<_>>().join("\n\n")
        };
        let live = self.live.as_mut().ok_or("no agent process")?;
        let request = PromptRequest::new(
            live.session.clone(),
            vec![ContentBlock::Text(TextContent::new(text))],
        );
        let conn = live.process.conn.clone();
        let tx = live.process.events_tx.clone();
        tokio::spawn(async move {
            let ended = conn
                .send_request(request)
                .block_task()
                .await
                .map(|r| {
                    let reason = serde_json::to_value(r.stop_reason)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_else(|| "end_turn".into());
                    (reason, r.usage)
                })
                .map_err(|e| e.to_string());
            let _ = tx.send(Incoming::TurnEnded(ended));
        });
        self.state.prompts += 1;
        self.state.in_turn = true;
        Ok(())
    }

    /// The agent's message so far has ended (a tool call, a request or the turn's end came after
    /// it): it goes on the run's timeline in the agent's words, once, secrets redacted.
    pub(super) fn end_message(&mut self) {
        if std::mem::replace(&mut self.state.said_ended, true) {
            return;
        }
        self.accounts.extend(Account::message(&self.state.said));
    }

    fn stderr(&self) -> String {
        self.live
            .as_ref()
            .map(|l| l.process.stderr().text(2000))
            .unwrap_or_default()
    }

    fn died(&mut self, why: &str) -> Move {
        let tail = self.stderr();
        self.live = None;
        Move::Suspend {
            reason: if tail.trim().is_empty() {
                format!("the agent stopped: {why}")
            } else {
                format!("the agent stopped: {why}. Its stderr ends:\n{}", tail.trim_end())
            },
        }
    }

    /// A session update: text streams to `obs`, the agent's account of its work is kept for the
    /// timeline, and a tool call that changed things unasked stops the run.
    fn on_update(&mut self, n: &SessionNotification, obs: &dyn Observer) -> Option<Move> {
        let v = serde_json::to_value(&n.update).unwrap_or(Value::Null);
        let kind = v.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
        if kind == "tool_call" || kind == "tool_call_update" {
            self.end_message();
        }
        if kind == "usage_update" {
            let session = self.state.session.as_deref();
            self.accounts.extend(spend::from_update(session, &v));
        }
        match self.state.calls.on_update(&v) {
            Seen::Nothing => {}
            Seen::Text(text) => {
                if self.state.said_ended {
                    // A new message after a tool call: the summary is the agent's last one.
                    self.state.said.clear();
                    self.state.said_ended = false;
                }
                updates::push_capped(&mut self.state.said, &text, updates::MAX_SAID);
                self.state.said_given = false;
                obs.on(&Progress::Text { text });
            }
            Seen::Record(account) => self.accounts.push(account),
            Seen::Stop { accounts, reason } => {
                self.accounts.extend(accounts);
                return Some(Move::Suspend { reason });
            }
        }
        None
    }
}

#[async_trait]
impl Agent for AcpAgent {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    async fn next(&mut self, obs: &dyn Observer) -> Result<Move, AgentError> {
        self.keep = false;
        if self.state.brief.is_none() && self.state.prompts == 0 {
            // The harness briefs the agent first: the goal with the facts it may use.
            return Ok(Move::Prompt {
                text: self.goal_text(),
            });
        }
        if let Err(why) = self.live().await {
            return Ok(self.died(&why));
        }
        if !self.state.in_turn {
            if self.state.prompts > MAX_FOLLOW_UPS && !self.state.tell.is_empty() {
                return Ok(Move::Finish {
                    summary: format!(
                        "the agent was refused {MAX_FOLLOW_UPS} times in a row; stopped here"
                    ),
                });
            }
            if let Err(why) = self.prompt() {
                return Ok(self.died(&why));
            }
        }
        let idle = Duration::from_secs(self.spec.idle_timeout_s.max(1));
        loop {
            let Some(live) = self.live.as_mut() else {
                return Ok(self.died("the process is gone"));
            };
            let event = match tokio::time::timeout(idle, live.process.events.recv()).await {
                Ok(Some(e)) => e,
                Ok(None) => return Ok(self.died("its connection closed")),
                Err(_) => {
                    let secs = idle.as_secs();
                    return Ok(self.died(&format!("it has not answered for {secs} s")));
                }
            };
            match event {
                Incoming::Request { request, responder } => match self.on_request(*request) {
                    Handled::Answer(answer) => {
                        let _ = responder.respond_with_result(answer);
                    }
                    Handled::Decide(m) => {
                        self.hold(responder);
                        return Ok(m);
                    }
                },
                Incoming::Update(n) => {
                    if let Some(m) = self.on_update(&n, obs) {
                        return Ok(m);
                    }
                }
                Incoming::TurnEnded(Ok((reason, usage))) => {
                    self.state.in_turn = false;
                    let session = self.state.session.as_deref();
                    self.accounts.extend(spend::from_turn(session, usage.as_ref()));
                    self.account_blocked().await;
                    self.end_message();
                    if !self.state.tell.is_empty() && self.state.prompts <= MAX_FOLLOW_UPS {
                        if let Err(why) = self.prompt() {
                            return Ok(self.died(&why));
                        }
                        continue;
                    }
                    let said = self.state.said.trim();
                    return Ok(match reason.as_str() {
                        "end_turn" => Move::Finish {
                            summary: if said.is_empty() {
                                "the agent ended its turn".into()
                            } else {
                                said.chars().take(2000).collect()
                            },
                        },
                        other => Move::Fail {
                            reason: format!("the agent stopped its turn: {other}"),
                        },
                    });
                }
                Incoming::TurnEnded(Err(e)) => {
                    self.account_blocked().await;
                    return Ok(self.died(&format!("its prompt failed: {e}")))
                }
                Incoming::Closed(why) => {
                    let running = self.live.as_mut().is_some_and(|l| l.process.running());
                    let why = if running { why } else { format!("its process exited ({why})") };
                    return Ok(self.died(&why));
                }
            }
        }
    }

    fn observe(&mut self, observation: &Observation) {
        self.answer(observation);
    }

    fn state(&self) -> Value {
        serde_json::to_value(&self.state).unwrap_or(Value::Null)
    }

    fn restore(&mut self, state: &Value) -> Result<(), AgentError> {
        if state.is_null() {
            self.state = State::default();
            return Ok(());
        }
        self.state =
            serde_json::from_value(state.clone()).map_err(|e| AgentError::State(e.to_string()))?;
        Ok(())
    }

    fn conversation(&mut self) -> Option<&mut dyn Conversation> {
        Some(self)
    }

    fn external(&mut self) -> Option<&mut dyn External> {
        Some(self)
    }
}

impl Conversation for AcpAgent {
    fn prompted(&mut self, text: &str) {
        self.state.brief = Some(text.to_owned());
    }

    fn recovered(&mut self, summary: &crate::resume::RecoverySummary) {
        // A process of this run still alive here heard everything itself.
        if self.services.sessions.holds(self.services.run) {
            return;
        }
        self.state.in_turn = false;
        self.state.said_ended = true;
        if !summary.text.is_empty() {
            self.state.tell.push(format!(
                "You were restarted. What Reins recorded meanwhile:\n{}",
                summary.text
            ));
        }
    }
}

#[async_trait]
impl External for AcpAgent {
    async fn interrupt(&mut self) {
        self.cancel_turn().await;
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

    fn deliver(&mut self) {
        let out = self.outbox.lock().ok().and_then(|mut o| o.take());
        if let Some(out) = out {
            crate::fault_point!("before_answer");
            out.send();
        }
    }

    /// Every agent started here: one the kernel keeps from the workspace writes nothing there,
    /// unless the kernel cannot keep it (then watching is what is left).
    fn watched(&self) -> bool {
        true
    }
}

impl Drop for AcpAgent {
    /// A run waiting for a person keeps its process for its next attempt here; otherwise the
    /// process and everything it started end with the attempt.
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            if self.keep {
                self.services.sessions.keep(self.services.run, Box::new(live));
            }
        }
    }
}
