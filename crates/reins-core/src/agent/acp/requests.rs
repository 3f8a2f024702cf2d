//! The requests an external agent sends Reins, as the moves that decide them, and the answers it
//! gets once their steps are done: a write or a read through the jail, a command through the shell
//! classifier, a permission judged as the action it reports. Requests Reins does not implement are
//! answered "method not found"; a command's output is kept for `terminal/output`.

use agent_client_protocol::v1::schema::AgentRequest;
use agent_client_protocol::v1::Responder;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::AcpAgent;
use crate::agent::{Move, Observation};
use crate::action::ToolCall;

/// The request being decided, and how to answer it once its step is done.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(super) enum Asked {
    Write { path: String },
    Read { line: Option<u32>, limit: Option<u32> },
    Permission { allow: Option<String>, reject: Option<String>, path: Option<String> },
    Terminal { id: String },
}

/// A permission this run granted, for the write that follows it, or for the same request asked
/// again by an agent restarted before it heard the grant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Permitted {
    step: i64,
    path: String,
    /// The grant reached the agent that asked.
    delivered: bool,
    /// A write ran under it: it is spent.
    used: bool,
}

impl AcpAgent {
    /// The latest unspent grant for `path` (one the agent heard, for a write; one it did not, for
    /// the same permission asked again), marked spent. The engine still checks it reported exactly
    /// the action now asked for.
    fn bind(&mut self, path: &str, for_write: bool) -> Option<i64> {
        let p = self
            .state
            .permitted
            .iter_mut()
            .rev()
            .find(|p| p.path == path && !p.used && (for_write || !p.delivered))?;
        p.used = true;
        Some(p.step)
    }
}

/// Characters of the agent's message kept as its reason for a request.
const MAX_REASON: usize = 500;

/// A command's outcome, kept for the agent's `terminal/output` and `terminal/wait_for_exit`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Terminal {
    output: String,
    exit_code: u32,
}

/// What Reins makes of a request as it lands.
#[derive(Debug)]
pub enum Handled {
    /// A move to decide through the step protocol; the request is answered when its step is done.
    Decide(Move),
    /// Answered at once: nothing to decide (a command's kept output, a method Reins does not
    /// implement).
    Answer(Result<Value, agent_client_protocol::Error>),
}

impl AcpAgent {
    /// An agent's request: the move that decides it, or the answer it gets at once.
    pub(super) fn on_request(&mut self, request: AgentRequest) -> Handled {
        let root = self.services.root.clone();
        let rel = |p: &std::path::Path| {
            crate::action::permission::relative_to(&root, &p.to_string_lossy())
        };
        let (asked, call, bound) = match request {
            AgentRequest::WriteTextFileRequest(r) => {
                self.state.calls.asked_for_latest();
                let path = rel(&r.path);
                let bound = self.bind(&path, true);
                (
                    Asked::Write { path: path.clone() },
                    ToolCall {
                        tool: "fs.write".into(),
                        args: json!({"path": path, "content": r.content}),
                    },
                    bound,
                )
            }
            AgentRequest::ReadTextFileRequest(r) => {
                // Read through Reins: judged here, as a read of its own would be.
                self.state.calls.asked_for_latest();
                (
                    Asked::Read {
                        line: r.line,
                        limit: r.limit,
                    },
                    ToolCall {
                        tool: "fs.read".into(),
                        args: json!({"path": rel(&r.path)}),
                    },
                    None,
                )
            }
            AgentRequest::RequestPermissionRequest(r) => {
                let find = |kinds: &[&str]| {
                    r.options.iter().find_map(|o| {
                        let k = serde_json::to_value(o.kind).ok()?;
                        kinds
                            .contains(&k.as_str()?)
                            .then(|| o.option_id.0.to_string())
                    })
                };
                let fields = serde_json::to_value(&r.tool_call.fields).unwrap_or(Value::Null);
                let mut args = serde_json::Map::new();
                for key in ["kind", "title", "rawInput", "locations", "content"] {
                    if let Some(v) = fields.get(key).filter(|v| !v.is_null()) {
                        args.insert(key.into(), v.clone());
                    }
                }
                // Some agents title a permission with the tool's input only; the title they gave
                // the tool call itself says which tool it is.
                let bare = args
                    .get("title")
                    .and_then(Value::as_str)
                    .is_none_or(|t| t.trim().is_empty() || t.trim_start().starts_with('{'));
                if bare {
                    if let Some(t) = self.state.calls.title(r.tool_call.tool_call_id.0.as_ref()) {
                        let t: String = t.chars().take(500).collect();
                        args.insert("title".into(), Value::String(t));
                    }
                }
                self.state.calls.asked(r.tool_call.tool_call_id.0.as_ref());
                let path = crate::action::permission::reported_path(&Value::Object(args.clone()))
                    .map(|p| rel(std::path::Path::new(&p)));
                let bound = path.as_deref().and_then(|p| self.bind(p, false));
                (
                    Asked::Permission {
                        // Never `allow_always`: a lasting rule would move out of Reins' sight.
                        allow: find(&["allow_once"]),
                        reject: find(&["reject_once", "reject_always"]),
                        path,
                    },
                    ToolCall {
                        tool: crate::action::permission::TOOL.into(),
                        args: Value::Object(args),
                    },
                    bound,
                )
            }
            AgentRequest::CreateTerminalRequest(r) => {
                self.state.calls.asked_for_latest();
                let id = format!("term-{}", self.state.terminals.len() + 1);
                let args = if r.args.is_empty() {
                    json!({"command": r.command})
                } else {
                    let mut argv = vec![r.command];
                    argv.extend(r.args);
                    json!({"argv": argv})
                };
                (
                    Asked::Terminal { id },
                    ToolCall {
                        tool: "shell.exec".into(),
                        args,
                    },
                    None,
                )
            }
            AgentRequest::TerminalOutputRequest(r) => {
                let t = self.state.terminals.get(r.terminal_id.0.as_ref());
                let answer = match t {
                    Some(t) => Ok(json!({
                        "output": t.output,
                        "truncated": false,
                        "exitStatus": {"exitCode": t.exit_code},
                    })),
                    None => Err(unknown_terminal()),
                };
                return Handled::Answer(answer);
            }
            AgentRequest::WaitForTerminalExitRequest(r) => {
                let t = self.state.terminals.get(r.terminal_id.0.as_ref());
                let answer = match t {
                    Some(t) => Ok(json!({"exitCode": t.exit_code})),
                    None => Err(unknown_terminal()),
                };
                return Handled::Answer(answer);
            }
            // The command ran to its end (or its timeout) inside its step: nothing is left to kill.
            AgentRequest::KillTerminalRequest(_) | AgentRequest::ReleaseTerminalRequest(_) => {
                return Handled::Answer(Ok(json!({})));
            }
            other => {
                tracing::info!(
                    "the agent sent a request Reins does not implement: {}",
                    agent_client_protocol::JsonRpcMessage::method(&other)
                );
                return Handled::Answer(Err(agent_client_protocol::Error::method_not_found()));
            }
        };
        self.state.asked = Some(asked);
        self.end_message();
        // Taken for every request, so a later one is never given an older message.
        let why = self.reason();
        Handled::Decide(match bound {
            Some(permission) => Move::Bound { call, permission },
            None => Move::Call { call, why },
        })
    }

    /// What the agent last said, as its reason for what it asks now (a card shows it as the
    /// agent's words): its message before the tool call, cut to a few lines; never a message an
    /// earlier request was already given.
    fn reason(&mut self) -> Option<String> {
        let given = std::mem::replace(&mut self.state.said_given, true);
        let said = self.state.said.trim();
        (!given && !said.is_empty()).then(|| {
            let mut cut: String = said.chars().take(MAX_REASON).collect();
            if cut.len() < said.len() {
                cut.push('…');
            }
            cut
        })
    }

    /// Keeps the agent's `responder` for the request being decided (answered by [`Self::answer`],
    /// or refused if the run ends first).
    pub(super) fn hold(&mut self, responder: Responder<Value>) {
        let permission = match &self.state.asked {
            Some(Asked::Permission { reject, .. }) => Some(reject.clone()),
            _ => None,
        };
        if let Some(live) = self.live.as_mut() {
            if let Ok(mut slot) = live.responder.lock() {
                *slot = Some(super::cancel::Pending {
                    responder,
                    permission,
                });
            }
        }
    }

    /// Answers the request whose step is done.
    pub(super) fn answer(&mut self, o: &Observation) {
        let Some(asked) = self.state.asked.take() else {
            return;
        };
        // Decided after the attempt that asked ended: the process waiting for it may be kept here.
        self.adopt();
        let responder = self
            .live
            .as_mut()
            .and_then(|l| l.responder.lock().ok().and_then(|mut r| r.take()))
            .map(|p| p.responder);
        let refusal = || agent_client_protocol::Error::new(-32000, o.output.clone());
        let answer = match &asked {
            Asked::Write { .. } if o.ok => Ok(json!({})),
            Asked::Read { line, limit } if o.ok => Ok(json!({"content": lines(&o.output, *line, *limit)})),
            Asked::Terminal { id } => {
                self.state.terminals.insert(
                    id.clone(),
                    Terminal {
                        output: o.output.clone(),
                        exit_code: u32::from(!o.ok),
                    },
                );
                if o.output.starts_with("rejected") || o.output.starts_with("denied") {
                    Err(refusal())
                } else {
                    Ok(json!({"terminalId": id}))
                }
            }
            Asked::Permission {
                allow,
                reject,
                path,
            } => {
                let chosen = if o.ok { allow } else { reject };
                if o.ok {
                    if let Some(path) = path {
                        self.state.permitted.push(Permitted {
                            step: o.seq,
                            path: path.clone(),
                            delivered: responder.is_some(),
                            used: false,
                        });
                    }
                } else if responder.is_some() {
                    self.state
                        .tell
                        .push(format!("Your request was refused: {}", o.output));
                }
                Ok(match chosen {
                    Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
                    None => json!({"outcome": {"outcome": "cancelled"}}),
                })
            }
            _ => Err(refusal()),
        };
        match responder {
            // A refused write or read is heard with this answer (its error carries the reason),
            // once the step is committed (`deliver`): never an answer heard but not recorded.
            Some(r) => {
                if let Ok(mut out) = self.outbox.lock() {
                    *out = Some(Outgoing { responder: r, answer });
                }
            }
            // The process that asked is gone: the next one hears it in its prompt.
            None => self.state.tell.push(restarted(&asked, o)),
        }
    }
}


/// An answer waiting for its step's commit.
pub(super) struct Outgoing {
    responder: Responder<Value>,
    answer: Result<Value, agent_client_protocol::Error>,
}

impl Outgoing {
    pub(super) fn send(self) {
        let _ = self.responder.respond_with_result(self.answer);
    }
}

/// What an agent restarted while its request was decided is told of the decision.
fn restarted(asked: &Asked, o: &Observation) -> String {
    let first = o.output.lines().next().unwrap_or("");
    match asked {
        Asked::Permission { .. } if o.ok => format!(
            "Before you were restarted, your permission request was approved ({first}), but you never heard it, so nothing was carried out. Ask for it again exactly as before: it is allowed without a second review."
        ),
        _ => format!(
            "Before you were restarted, your {} request was {}: {first}",
            asked_name(asked),
            if o.ok { "carried out" } else { "refused" },
        ),
    }
}

fn asked_name(a: &Asked) -> &'static str {
    match a {
        Asked::Write { .. } => "file write",
        Asked::Read { .. } => "file read",
        Asked::Permission { .. } => "permission",
        Asked::Terminal { .. } => "command",
    }
}

fn unknown_terminal() -> agent_client_protocol::Error {
    agent_client_protocol::Error::invalid_params().data(json!("no such terminal"))
}

/// `limit` lines of `text` from line `line` (1-based), as ACP reads ask.
fn lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_owned();
    }
    let skip = line.map_or(0, |l| l.saturating_sub(1) as usize);
    let take = limit.map_or(usize::MAX, |l| l as usize);
    text.split_inclusive('\n').skip(skip).take(take).collect()
}
