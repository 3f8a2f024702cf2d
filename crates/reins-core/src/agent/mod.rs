//! Agents reason; the harness owns the loop. An agent proposes the next move, is told what happened,
//! and can serialise its state into a checkpoint and be restored from one.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;

use crate::action::ToolCall;
use crate::ids::RunId;
use crate::context::working::WorkingMemory;
use crate::progress::Observer;

pub mod acp;
pub mod claude;
pub mod llm;
pub mod script;
pub mod registry;
mod outputs;
mod sessions;

pub use outputs::{has_artifact, StepOutputs};
pub use sessions::{Kept, Sessions};

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("plan {origin}: {detail}")]
    Plan { origin: String, detail: String },
    #[error("unknown agent kind {0:?}")]
    UnknownKind(String),
    #[error("cannot restore agent state: {0}")]
    State(String),
    /// What a person asked for is malformed (a session id, a missing goal).
    #[error("{0}")]
    Invalid(String),
}

/// What the agent wants next.
#[derive(Clone, Debug, PartialEq)]
pub enum Move {
    Call {
        call: ToolCall,
        why: Option<String>,
    },
    /// Ask the model. The harness assembles the context under its budget, records the manifest,
    /// makes the call as a step with its own checkpoint and hands the reply to [`Agent::replied`].
    Think(ModelInput),
    /// Ask the person a question; the run waits, and the answer comes back through
    /// [`Agent::observe`] as the result of the `ask_user` call.
    Ask {
        question: String,
    },
    /// A call bound to an earlier permission step of the run (an external agent's write after
    /// its permission was granted): the harness runs it without a second review only if that step
    /// was granted and reported exactly this action; otherwise it is judged like any call.
    Bound {
        call: ToolCall,
        permission: i64,
    },
    /// Brief an external agent: its first prompt, `text`, goes to it with the profile facts it
    /// may use, added by the harness (which journals what was sent and hands it to
    /// [`Agent::prompted`]).
    Prompt {
        text: String,
    },
    Finish {
        summary: String,
    },
    Fail {
        reason: String,
    },
    /// The run cannot go on without a person (an external agent died or stopped answering).
    Suspend {
        reason: String,
    },
    /// The agent runs outside Reins and asks nothing now (Claude Code between tool calls): the run
    /// waits, attached, for its next request.
    Detach,
}

/// What an agent wants to send the model, in pieces the context assembler can rank and cut.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelInput {
    pub settings: crate::provider::Settings,
    pub parts: Vec<Part>,
    /// OpenAI `tools` entries.
    pub tools: Vec<serde_json::Value>,
}

/// One candidate for the context: the messages it stands for, and how it ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub id: String,
    pub kind: crate::context::Kind,
    /// Shared: a long run's earlier turns are handed over for every call without a copy.
    pub messages: std::sync::Arc<[crate::provider::Message]>,
    pub relevance: f32,
    pub importance: f32,
    pub age: u32,
    pub continuity: bool,
    /// A shorter stand-in and the artifact holding the whole, for large items.
    pub digest: Option<(std::sync::Arc<[crate::provider::Message]>, String)>,
}

/// The result of one step, as the agent sees it. `output` is the step's result as the journal
/// keeps it: an agent's history may refer to it by `seq` (see [`StepOutputs`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Observation {
    pub seq: i64,
    pub tool: String,
    pub ok: bool,
    pub output: String,
    /// The call's arguments as it ran: a person may have edited what the agent proposed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ran: Option<serde_json::Value>,
    /// A large output is also kept whole in the blob store under this digest (see
    /// [`ARTIFACT_BYTES`]); an agent may hand the model a part of it and this reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<crate::digest::Digest>,
}

/// Outputs longer than this are stored as artifacts in the blob store.
pub const ARTIFACT_BYTES: usize = 8 * 1024;

/// An agent, as the harness drives it: it proposes the next move, is told what happened, and can
/// serialise its state into a checkpoint and be restored from one. What only some agents do is a
/// capability, asked for by name: a conversation, a process of its own, tools it offers.
#[async_trait]
pub trait Agent: Send + Sync {
    fn kind(&self) -> &'static str;
    fn version(&self) -> &'static str;
    /// What the agent wants next. An agent whose moves arrive with text (an external agent's
    /// message chunks) streams it to `obs` meanwhile.
    async fn next(&mut self, obs: &dyn Observer) -> Result<Move, AgentError>;
    /// Called with the outcome of the call `next` proposed, before the step's checkpoint is written.
    fn observe(&mut self, observation: &Observation);
    /// What a checkpoint holds of the agent: bounded, whatever the length of the run (what only
    /// grows goes in its conversation's history).
    fn state(&self) -> serde_json::Value;
    fn restore(&mut self, state: &serde_json::Value) -> Result<(), AgentError>;
    /// The agent is talked to: briefed, told a recovery, handed the model's replies.
    fn conversation(&mut self) -> Option<&mut dyn Conversation> {
        None
    }
    /// The agent is a process of its own, outside the harness.
    fn external(&mut self) -> Option<&mut dyn External> {
        None
    }
    /// The agent offers its model tools from MCP servers the harness starts.
    fn tools(&mut self) -> Option<&mut dyn OffersTools> {
        None
    }
}

/// An agent the harness talks to, with a conversation it keeps as an append-only history.
pub trait Conversation: Send {
    /// Told once when a run resumes, before the agent proposes anything: what was done, what was
    /// settled and what changed meanwhile. An LLM agent puts it in its context.
    fn recovered(&mut self, _summary: &crate::resume::RecoverySummary) {}
    /// The reviewer rejected the call in flight together with the calls queued after it in the
    /// same turn: each queued call is answered refused with `reason`, and none is proposed.
    fn reject_queued(&mut self, _reason: &str) {}
    /// The brief the harness assembled for the [`Move::Prompt`] this agent proposed: what to send.
    fn prompted(&mut self, _text: &str) {}
    /// The model's answer to the [`Move::Think`] this agent proposed.
    fn replied(&mut self, _reply: &crate::provider::Completion) {}
    /// Goal, constraints, what is done and pending: kept in every checkpoint (in the agent state)
    /// and shown on review cards.
    fn working_memory(&self) -> Option<WorkingMemory> {
        None
    }
    /// How many entries the append-only history has (an LLM agent's conversation). The harness
    /// writes each entry once into the journal, with the first checkpoint after it, and a
    /// checkpoint says how many entries it stands on; so checkpoints do not grow with the run.
    fn history_len(&self) -> usize {
        0
    }
    /// The history's entries from `from` on.
    fn history_since(&self, _from: usize) -> Vec<serde_json::Value> {
        Vec::new()
    }
    /// The history a checkpoint stands on, read back from the journal (after
    /// [`Agent::restore`] with that checkpoint's state), with the outputs of the run's steps its
    /// entries may refer to.
    fn restore_history(
        &mut self,
        entries: Vec<serde_json::Value>,
        _outputs: &StepOutputs,
    ) -> Result<(), AgentError> {
        if entries.is_empty() {
            Ok(())
        } else {
            Err(AgentError::State(format!(
                "{} history entries for an agent that keeps none",
                entries.len()
            )))
        }
    }
}

/// An agent that is a process of its own outside the harness (an ACP agent, Claude Code): it
/// cannot be checkpointed, reports what it does, and may be asked things from outside Reins.
#[async_trait]
pub trait External: Send {
    /// The run stops at the safe point it is at (a pause, a drain, a cancellation) while `next`
    /// was waiting: the agent ends that wait in order, so what it was doing is not lost. `next`
    /// was not finished; it is asked again when the run goes on.
    async fn interrupt(&mut self) {}
    /// The run stops for a person and this process may carry on with it: keep what a checkpoint
    /// cannot hold (the live process) for the next attempt.
    fn keep_alive(&mut self) {}
    /// A process the agent started since last asked (pid, command), for the harness to record so
    /// recovery after a crash can end it.
    fn take_started(&mut self) -> Option<(u32, String)> {
        None
    }
    /// What the agent reported since last asked, for the run's record (its account of its own
    /// work); recorded before its next move.
    fn take_accounts(&mut self) -> Vec<Account> {
        Vec::new()
    }
    /// The agent changes the workspace itself and keeps its own context (Claude Code): a drive
    /// neither fingerprints the workspace nor tells it a recovery summary.
    fn runs_outside(&self) -> bool {
        false
    }
    /// Sends the agent the answer to its last request: called once the step that decided it is
    /// committed, so a crash can never leave an answer the agent heard but the journal lacks.
    fn deliver(&mut self) {}
    /// Reins started the agent's process and it may change the workspace by itself (in the
    /// kernel's eyes): what it changes there that no approval covered is caught between its moves.
    fn watched(&self) -> bool {
        false
    }
    /// Whether the agent takes requests made outside Reins (a Claude Code hook's, kept as the
    /// run's request rows) and whether it can take one now.
    fn wants_request(&self) -> bool {
        false
    }
    /// How long a card of this agent's may wait for a person, when it says (a headless session
    /// started with a review deadline); the policy's review timeout otherwise.
    fn review_deadline(&self) -> Option<std::time::Duration> {
        None
    }
    /// A request made outside Reins, handed over by the drive: the agent proposes it next.
    fn take_request(&mut self, _request: &serde_json::Value) -> Result<(), AgentError> {
        Err(AgentError::State(
            "this agent takes no requests from outside Reins".into(),
        ))
    }
}

/// An agent that offers its model the tools of MCP servers.
pub trait OffersTools: Send {
    /// The MCP servers whose tools it offers; the harness starts them for each attempt and tells
    /// the agent their tools by [`OffersTools::offer_tools`] before its first move.
    fn mcp_servers(&self) -> Vec<crate::mcp::ServerSpec>;
    /// The tools the run's MCP servers offer, once started.
    fn offer_tools(&mut self, catalog: &crate::mcp::Catalog);
}

/// The run an agent is built for, and what the harness lends it: keys, the processes this
/// process keeps alive between attempts, where its stderr is logged, how Reins is started again.
#[derive(Clone)]
pub struct Services {
    pub run: RunId,
    pub root: std::path::PathBuf,
    pub secrets: Arc<dyn crate::keys::SecretStore>,
    pub sessions: Arc<Sessions>,
    /// Where the agent's stderr is logged (bounded); none: kept in memory only.
    pub log: Option<std::path::PathBuf>,
    /// How the agent starts Reins again (its memory server, its hook); none: it cannot.
    pub reins: Option<ReinsProgram>,
    /// What confines the processes the agent starts, and the agent itself.
    pub contain: crate::contain::Setup,
    /// Reins' store, for the memory server an external agent reaches from inside its sandbox.
    pub store: Option<crate::store::Store>,
}

/// How an agent Reins runs starts Reins itself again: the memory server an external agent is
/// offered (`reins mcp serve`), the hook a headless Claude Code is given (`reins hook`).
#[derive(Clone, Debug)]
pub struct ReinsProgram {
    /// The `reins` program.
    pub program: std::path::PathBuf,
    pub data_dir: std::path::PathBuf,
    pub config_dir: std::path::PathBuf,
    /// The policy file, when it is not `policy.toml` in the config dir.
    pub policy_file: Option<std::path::PathBuf>,
}

/// What a run is created with, whatever its agent: the agent's kind and version, the run's name
/// and goal, and the spec the agent is rebuilt from (stored; it names secrets, never holds them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewRun {
    pub kind: &'static str,
    pub version: &'static str,
    pub name: String,
    pub goal: String,
    pub spec: String,
    /// Keyring entries the agent is given: each must exist before the run is created.
    pub keys: Vec<String>,
}

/// What Reins answers a request an agent running outside it made (a hook's tool call).
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// Let the call run; `input` replaces the tool's input when a person edited it.
    Allow {
        reason: String,
        input: Option<serde_json::Value>,
    },
    /// Block it; the agent's model reads the reason.
    Deny { reason: String },
    /// Let the agent ask for permission its own way: a card waits in Reins' inbox, and the
    /// agent's ask reaches Reins on another channel, where the card answers it.
    Ask { reason: String },
}

/// A request an agent running outside Reins makes of its run, as the agent's kind reads it.
#[derive(Clone, Debug)]
pub struct Outside {
    /// The session's run: the newest of this kind and name unless it finished, else a new one.
    pub session: NewRun,
    pub workspace: std::path::PathBuf,
    pub asked: Asked,
}

/// What an outside request asks.
#[derive(Clone, Debug)]
pub enum Asked {
    /// Decide a tool call: `request` is what the agent takes as its next move, `args` the call's
    /// arguments. The same call asked again (`same`) is answered by its card rather than a new one.
    /// With `wait` false, a card is not waited for: the answer is [`Answer::Ask`].
    Decide {
        request: serde_json::Value,
        args: serde_json::Value,
        same: fn(&serde_json::Value, &serde_json::Value) -> bool,
        wait: bool,
        /// A step whose card answers this call on the agent's own channel (a headless session
        /// started again): when it is this call, the answer is [`Answer::Ask`] at once.
        carried: Option<i64>,
    },
    /// Record what happened (no decision).
    Record { request: serde_json::Value },
    /// The session ended: its run finishes with `request` and a card still waiting expires.
    End { request: serde_json::Value },
    /// Nothing for Reins (a session Reins runs itself reports through its own channel).
    Nothing,
}

/// What an agent reports for the run's record besides its moves: its account of itself and its
/// work.
#[derive(Clone, Debug, PartialEq)]
pub enum Account {
    /// Who the external agent is, as it said at `initialize`: into the run's compat record.
    Identified(crate::compat::ExternalAgent),
    /// Something the agent said about its own work: `tool_call`, `plan`, `usage`, `mode`, or a
    /// `message` it wrote (its words between tool calls).
    Update {
        what: &'static str,
        detail: serde_json::Value,
    },
    /// What the agent's confinement stopped during a turn, in words.
    Blocked(Vec<String>),
    /// What the agent says it has spent in all, in one of its sessions (`source`): its running
    /// totals, which count toward the run's budget. A cost in another currency than US dollars
    /// is left out (None).
    Spent {
        source: String,
        tokens: u64,
        cost_usd: Option<f64>,
    },
    /// Reins saw the agent report a tool call that changes things, which it ran without asking.
    Unasked {
        tool_call: String,
        kind: String,
        title: String,
    },
}

/// Characters of one agent message kept on the timeline.
const MAX_MESSAGE: usize = 4000;

impl Account {
    /// An external agent's message for the timeline (`agent.reported` `message`): trimmed, cut to
    /// 4,000 characters, secrets redacted; None when it says nothing.
    pub fn message(said: &str) -> Option<Self> {
        let said = said.trim();
        if said.is_empty() {
            return None;
        }
        let mut text: String = said.chars().take(MAX_MESSAGE).collect();
        if text.len() < said.len() {
            text.push('…');
        }
        Some(Account::Update {
            what: acp::MESSAGE,
            detail: serde_json::json!({ "text": crate::secrets::redact(&text) }),
        })
    }
}

/// Builds the agent a run was created with, from its stored kind and spec. `services` lends an
/// external agent what it needs (keys, the live sessions); the others need nothing.
pub fn build(
    kind: &str,
    spec: &str,
    services: &Services,
) -> Result<Box<dyn Agent>, AgentError> {
    match kind {
        acp::KIND => Ok(Box::new(acp::AcpAgent::new(
            acp::Spec::from_json(spec)?,
            services.clone(),
        ))),
        script::KIND => Ok(Box::new(script::ScriptAgent::new(script::Plan::from_json(
            spec,
        )?))),
        llm::KIND => Ok(Box::new(llm::LlmAgent::new(llm::Spec::from_json(spec)?))),
        claude::KIND => Ok(Box::new(claude::ClaudeAgent::new(
            claude::Spec::from_json(spec)?,
            Some(services.clone()),
        ))),
        other => Err(AgentError::UnknownKind(other.to_owned())),
    }
}

/// The keyring entries a run's agent of `kind` with `spec` is given (none when the spec does not
/// read: it names nothing Reins could look up).
pub fn keys_of(kind: &str, spec: &str) -> Vec<String> {
    let new = match kind {
        acp::KIND => acp::Spec::from_json(spec).map(|s| s.new_run()).ok(),
        llm::KIND => llm::Spec::from_json(spec).ok().and_then(|s| s.new_run().ok()),
        claude::KIND => claude::Spec::from_json(spec).map(|s| s.new_run()).ok(),
        _ => None,
    };
    new.map(|n| n.keys).unwrap_or_default()
}

/// The run a run of an agent of `kind` with `spec` starts over as, from its original input; None
/// when its kind cannot start over (an external agent's work is not a plan to replay).
pub fn start_over(kind: &str, spec: &str) -> Result<Option<NewRun>, AgentError> {
    match kind {
        script::KIND => Ok(Some(script::Plan::from_json(spec)?.new_run())),
        _ => Ok(None),
    }
}

/// Whether an agent of `kind` has sessions one process at a time may run (see
/// [`held_elsewhere`]).
pub fn has_sessions(kind: &str) -> bool {
    kind == claude::KIND
}

/// Why the run of an agent of `kind` with `spec` cannot be driven by this process now (another
/// process runs its agent's session); None when it can.
pub fn held_elsewhere(kind: &str, spec: &str, services: &Services) -> Option<String> {
    match kind {
        claude::KIND => claude::held_elsewhere(&claude::Spec::from_json(spec).ok()?, services),
        _ => None,
    }
}

/// One call of the hook of an agent of `kind` that runs outside Reins, as a request of its run.
pub async fn read_hook(kind: &str, text: &str, headless: bool) -> Result<Outside, AgentError> {
    match kind {
        claude::KIND => claude::hook::outside(text, headless)
            .await
            .map_err(|e| AgentError::State(e.to_string())),
        other => Err(AgentError::UnknownKind(other.to_owned())),
    }
}

/// What the hook of an agent of `kind` prints for `answer`.
pub fn hook_output(kind: &str, answer: &Answer) -> Result<serde_json::Value, AgentError> {
    match kind {
        claude::KIND => Ok(claude::hook::output(answer)),
        other => Err(AgentError::UnknownKind(other.to_owned())),
    }
}
