//! A headless Claude Code: `claude -p` on its stream-json channel with permission asks routed to
//! Reins (`--permission-prompt-tool stdio`) and Reins' own `PreToolUse` hook judging every call.
//! The process lives while the run is driven, and is kept for the run's next attempt in this
//! process while a card waits. Anywhere else the session is started again with `--resume`: when it
//! asks for the call a person decided meanwhile, the decision answers it (Reins' hook, told which
//! step by [`CARRIED_ENV`], leaves that call to the channel).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;

use super::hook::{Event, Input};
use super::stream::{self, Line, ToolUse};
use super::{tell, Answered, ClaudeAgent, Request, TOOL_RESULT};
use crate::agent::{Account, AgentError, Move, Services};
use crate::contain::link::Link;
use crate::contain::Confined;
use crate::progress::Observer;

/// Set for a headless Claude Code to the session's id: Reins' hooks, if the user installed them,
/// let that session's calls through to the control channel instead of deciding them twice.
pub const HEADLESS_ENV: &str = "REINS_CLAUDE_HEADLESS";

/// Set for a headless Claude Code started again on its session to the step whose card a person
/// decided meanwhile: Reins' hook leaves that call to the control channel, where the decision
/// answers it (the hook, another process, cannot tell whether it was answered already).
pub const CARRIED_ENV: &str = "REINS_CLAUDE_CARRIED";

/// What Claude Code is told when it is started again after a person decided its card.
pub const AFTER_REVIEW: &str = "A person has now decided the tool call you were waiting on. Carry on with your task where you left off: make that tool call again to get its answer.";

/// What Claude Code is told when it is started again with nothing decided meanwhile.
const CARRY_ON: &str = "Reins was restarted while you worked. Carry on with your task where you left off; a tool call that got no answer may be made again.";

/// Lines Claude Code may write ahead of Reins reading them.
const LINES: usize = 64;

/// A running headless Claude Code: its process, the lines it writes and a writer for its input.
pub(super) struct Live {
    pub(super) piped: crate::process::Piped,
    lines: mpsc::Receiver<Result<Line, String>>,
    input: mpsc::Sender<String>,
    /// The tool calls the model made, by id, until their results come.
    uses: BTreeMap<String, ToolUse>,
    /// One Claude Code per session: held while the process lives.
    _lock: std::fs::File,
    /// Its confinement (its temp dir goes with it) and the link its hook reaches Reins over.
    pub(super) confined: Option<Confined>,
    _link: Option<Link>,
    /// The refusals it printed that were recorded already.
    pub(super) seen: std::collections::BTreeSet<String>,
    /// What the kernel refused its tools this turn, in their own words.
    pub(super) refused: Vec<String>,
}

#[async_trait::async_trait]
impl crate::agent::Kept for Live {
    fn pid(&self) -> u32 {
        self.piped.pid
    }

    async fn end(self: Box<Self>, _why: &str) {
        // Dropping the process ends its whole process group; its asks die with it.
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

impl Live {
    /// Sends Claude Code one line; false when it no longer reads.
    fn send(&self, line: String) -> bool {
        self.input.try_send(line).is_ok()
    }

    /// Answers permission ask `request_id` with `answered`.
    pub(super) fn answer(&self, request_id: &str, answered: &Answered) {
        let line = if answered.allow {
            let input = answered
                .input
                .as_ref()
                .unwrap_or(&answered.args["rawInput"]);
            stream::allow(request_id, input)
        } else {
            stream::deny(request_id, &answered.reason)
        };
        self.send(line);
    }
}

/// Why run `run`'s session cannot be driven here now: another process (a `reins run --claude`, a
/// worker) runs it. None when it can.
pub fn held_elsewhere(spec: &super::Spec, services: &Services) -> Option<String> {
    spec.headless.as_ref()?;
    if services.sessions.holds(services.run) {
        return None;
    }
    let data_dir = &services.reins.as_ref()?.data_dir;
    match lock(data_dir, &spec.session_id, Hold::Look) {
        Err(Locked::Held(why)) => Some(why),
        Ok(_) | Err(Locked::Io(_)) => None,
    }
}

/// How a session's lock is taken.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Only to see whether a process runs the session: shared, so lookers never see each other.
    Look,
    /// To run it: alone.
    Run,
}

enum Locked {
    Held(String),
    Io(String),
}

/// Holds session `session` for this process (`how`): refused while another runs it.
fn lock(data_dir: &Path, session: &str, how: Hold) -> Result<std::fs::File, Locked> {
    let dir = data_dir.join("locks");
    std::fs::create_dir_all(&dir)
        .map_err(|e| Locked::Io(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(format!("claude-code-{session}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Locked::Io(format!("cannot open {}: {e}", path.display())))?;
    let taken = match how {
        Hold::Look => file.try_lock_shared(),
        Hold::Run => file.try_lock(),
    };
    match taken {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Locked::Held(format!(
            "Claude Code session {session} is already running under Reins (a `reins run --claude`, or a worker)"
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Locked::Io(format!("cannot lock {}: {e}", path.display())))
        }
    }
}

impl ClaudeAgent {
    /// Takes this run's process over from the ones kept here; whether the agent has one now.
    pub(super) fn adopt(&mut self) -> bool {
        if self.live.is_none() {
            if let Some(s) = &self.services {
                self.live = s.sessions.take::<Live>(s.run);
            }
        }
        self.live.is_some()
    }

    /// The next move of a headless session: Claude Code's next ask, or the end of its turn.
    pub(super) async fn next_headless(&mut self, obs: &dyn Observer) -> Result<Move, AgentError> {
        self.keep = false;
        if !self.adopt() {
            if let Err(why) = self.start().await {
                return Ok(Move::Suspend {
                    reason: format!("Claude Code cannot be started: {why}"),
                });
            }
        }
        loop {
            let Some(live) = self.live.as_mut() else {
                return Ok(self.gone("its process is gone"));
            };
            let line = match live.lines.recv().await {
                Some(Ok(line)) => line,
                Some(Err(why)) => return Ok(self.gone(&why)),
                None => return Ok(self.gone("its output closed")),
            };
            let Some(live) = self.live.as_mut() else {
                return Ok(self.gone("its process is gone"));
            };
            match line {
                Line::Init { session_id } if session_id != self.spec.session_id => {
                    return Ok(Move::Suspend {
                        reason: format!(
                            "Claude Code started session {session_id}, not {}",
                            self.spec.session_id
                        ),
                    });
                }
                Line::Init { .. } => {
                    // Started: the helper has reported what the kernel enforced.
                    let root = Path::new(&self.spec.cwd);
                    self.accounts.push(Account::Identified(live.identified(root)));
                }
                Line::Other => {}
                Line::Assistant { text, tool_uses } => {
                    if !text.trim().is_empty() {
                        tell(obs, &text);
                        self.accounts.extend(Account::message(&text));
                        self.state.said = text;
                    }
                    for u in tool_uses {
                        live.uses.insert(u.id.clone(), u);
                    }
                }
                Line::Permission {
                    request_id,
                    tool_name,
                    input,
                    tool_use_id,
                } => {
                    let ask = input_of(&self.spec, Event::PreToolUse, tool_name, input, tool_use_id, None);
                    let report = ask.report();
                    let answered = self
                        .state
                        .answered
                        .take_if(|a| super::hook::same_call(&a.args, &report));
                    if let Some(answered) = answered {
                        // A person decided this call when a hook asked it.
                        if let Some(live) = &self.live {
                            live.answer(&request_id, &answered);
                        }
                        continue;
                    }
                    let why = Some(self.state.said.clone()).filter(|s| !s.trim().is_empty());
                    let call = crate::action::ToolCall {
                        tool: crate::action::permission::TOOL.into(),
                        args: report,
                    };
                    self.state.channel = Some(request_id);
                    self.state.pending = Some(Request::Pre {
                        tool_use_id: ask.call_id(),
                        call: call.clone(),
                        why: why.clone(),
                    });
                    return Ok(Move::Call { call, why });
                }
                Line::Control {
                    request_id,
                    subtype,
                } => {
                    live.send(stream::refuse(&request_id, &subtype));
                }
                Line::ToolResults(results) => {
                    for r in results {
                        let Some(used) = live.uses.remove(&r.tool_use_id) else {
                            continue;
                        };
                        live.note_refusals(&used.name, &r.detail);
                        let mut response = if r.detail.is_object() {
                            r.detail
                        } else {
                            json!({})
                        };
                        if r.is_error {
                            response["is_error"] = true.into();
                        }
                        let done = input_of(
                            &self.spec,
                            Event::PostToolUse,
                            used.name,
                            used.input,
                            Some(used.id),
                            Some(response),
                        );
                        self.accounts.push(Account::Update {
                            what: TOOL_RESULT,
                            detail: super::hook::post_detail(&done),
                        });
                    }
                }
                Line::Result {
                    ok,
                    text,
                    usage,
                    cost_usd,
                } => {
                    // Its totals for this process's session count toward the run's budget.
                    let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
                    self.accounts.push(Account::Spent {
                        source: format!(
                            "claude:{}:{}",
                            self.spec.session_id,
                            self.live.as_ref().map_or(0, |l| l.piped.pid)
                        ),
                        tokens: count("input_tokens") + count("output_tokens"),
                        cost_usd,
                    });
                    self.accounts.push(Account::Update {
                        what: "usage",
                        detail: json!({"usage": usage, "costUsd": cost_usd}),
                    });
                    let summary = if text.trim().is_empty() {
                        self.state.said.clone()
                    } else {
                        text
                    };
                    // The turn is over: the process has nothing more to say.
                    if let Some(mut live) = self.live.take() {
                        self.accounts.extend(live.blocked(&self.spec).await);
                    }
                    return Ok(if ok {
                        Move::Finish { summary }
                    } else {
                        Move::Fail {
                            reason: format!("Claude Code's turn ended in an error: {summary}"),
                        }
                    });
                }
            }
        }
    }

    /// The process ended or closed its output before its turn ended: the run waits for a person,
    /// with what it last wrote to stderr.
    fn gone(&mut self, why: &str) -> Move {
        let tail = match self.live.take() {
            Some(mut live) => {
                let running = live.piped.running();
                let tail = live.piped.stderr.text(2000);
                let what = if running { "closed its output" } else { "exited" };
                format!("Claude Code {what} before its turn ended ({why})")
                    + &if tail.trim().is_empty() {
                        String::new()
                    } else {
                        format!(": {}", tail.trim())
                    }
            }
            None => format!("Claude Code stopped before its turn ended ({why})"),
        };
        Move::Suspend { reason: tail }
    }

    /// Starts Claude Code on the session: new with its task, or resumed (with what it must hear).
    async fn start(&mut self) -> Result<(), String> {
        let headless = self.spec.headless.clone().unwrap_or_default();
        let services = self
            .services
            .clone()
            .ok_or("no services to start Claude Code with")?;
        let reins = services.reins.clone().ok_or(
            "Reins cannot tell where its `reins` program is, and without its hook Claude Code would let some calls through unjudged: put `reins` on PATH",
        )?;
        let session = self.spec.session_id.clone();
        // A process only looking holds it for an instant: waited out, for half a second at most.
        let mut tries = 0;
        let lock = loop {
            match lock(&reins.data_dir, &session, Hold::Run) {
                Ok(file) => break file,
                Err(Locked::Held(_)) if tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
                }
                Err(Locked::Held(why) | Locked::Io(why)) => return Err(why),
            }
        };
        let mut keys = Vec::new();
        for (var, name) in &headless.env {
            match crate::keys::get_blocking(std::sync::Arc::clone(&services.secrets), name).await {
                Ok(Some(secret)) => keys.push((var.clone(), secret)),
                Ok(None) => return Err(format!("the key {name} is not in the keyring")),
                Err(e) => return Err(e.to_string()),
            }
        }
        let resumed = self.state.started || headless.resumed;
        let prompt = match self.state.prompt.take() {
            Some(text) => text,
            None if !resumed => headless.goal.clone(),
            None if self.state.answered.is_some() => AFTER_REVIEW.to_owned(),
            None => CARRY_ON.to_owned(),
        };
        let config_dir = reins.config_dir.to_string_lossy().into_owned();
        let carried = self
            .state
            .answered
            .as_ref()
            .map(|a| a.seq.to_string())
            .unwrap_or_default();
        // Reins' own hooks, when installed, leave this session's asks to the channel.
        let set = [
            (HEADLESS_ENV, session.as_str()),
            (crate::data_dir::CONFIG_DIR_ENV, config_dir.as_str()),
            (CARRIED_ENV, carried.as_str()),
        ];
        let (confined, link) = super::confine::confine(&services, &reins, &headless, &set).await?;
        let mut claude = vec![
            headless.program.clone(),
            "-p".into(),
            "--input-format".into(),
            "stream-json".into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
            "--permission-prompt-tool".into(),
            "stdio".into(),
        ];
        if resumed {
            claude.extend(["--resume".into(), session.clone()]);
        } else {
            claude.extend(["--session-id".into(), session.clone()]);
        }
        let hook = super::confine::hook_settings(&reins, link.as_ref().map(|l| l.port));
        claude.extend(["--settings".into(), hook.to_string()]);
        // Only the person's own settings besides Reins' hook: a repository's `.claude/settings*.json`
        // could switch hooks off (`disableAllHooks`) or allow calls by itself.
        claude.extend(["--setting-sources".into(), "user".into()]);
        // Claude Code dies with this Reins (killed or crashed) instead of going on unheard: its
        // asks would go nowhere, and its session is resumed from disk anyway. Confined, the
        // helper is told (TERM), and ends the whole tree.
        let (started, tmp) = crate::contain::launch::piped_start(confined.as_ref(), &claude);
        let signal = if confined.is_some() { "TERM" } else { "KILL" };
        let path = std::env::var_os("PATH");
        let mut argv: Vec<String> = match crate::process::find_program("setpriv", path.as_deref()) {
            Some(setpriv) => vec![
                setpriv.to_string_lossy().into_owned(),
                "--pdeathsig".into(),
                signal.into(),
                "--".into(),
            ],
            None => Vec::new(),
        };
        argv.extend(started);
        let mut set = set.to_vec();
        if let Some(tmp) = &tmp {
            set.push(("TMPDIR", tmp));
        }
        if let Some(link) = &link {
            set.push((super::link::TOKEN_ENV, &link.token));
        }
        let (piped, stdin, stdout) = crate::process::spawn_piped(crate::process::PipedSpec {
            argv: &argv,
            confined: confined.is_some(),
            root: Path::new(&self.spec.cwd),
            base_env: crate::agent::acp::session::BASE_ENV,
            passed: &headless.pass_env,
            set: &set,
            keys: &keys,
            log: services.log.clone(),
        })
        .map_err(|e| match e {
            crate::process::PipedError::Spawn { program, source } => {
                format!("`{program}`: {source}")
            }
            other => format!("{other:?}"),
        })?;
        self.started = Some((piped.pid, claude.join(" ")));
        let (input, writes) = mpsc::channel::<String>(LINES);
        tokio::spawn(write_lines(stdin, writes));
        let (lines_tx, lines) = mpsc::channel(LINES);
        tokio::spawn(read_lines(stdout, lines_tx));
        let live = Live {
            piped,
            lines,
            input,
            uses: BTreeMap::new(),
            _lock: lock,
            confined,
            _link: link,
            seen: std::collections::BTreeSet::new(),
            refused: Vec::new(),
        };
        if !live.send(stream::user_message(&prompt)) {
            return Err("it stopped reading its input".into());
        }
        self.state.started = true;
        self.live = Some(live);
        Ok(())
    }
}

/// A hook's input for what Claude Code said on its channel.
fn input_of(
    spec: &super::Spec,
    event: Event,
    tool_name: String,
    tool_input: Value,
    tool_use_id: Option<String>,
    tool_response: Option<Value>,
) -> Input {
    Input {
        session_id: spec.session_id.clone(),
        transcript_path: None,
        cwd: spec.cwd.clone(),
        hook_event_name: event,
        tool_name,
        tool_input,
        tool_use_id,
        tool_response,
        reason: None,
    }
}

/// Writes each line whole, in order, until the agent or Claude Code stops.
async fn write_lines(mut stdin: tokio::process::ChildStdin, mut lines: mpsc::Receiver<String>) {
    while let Some(line) = lines.recv().await {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
}

/// Reads Claude Code's lines into `out`; the last is why its output ended.
async fn read_lines(
    stdout: crate::process::Capped<tokio::process::ChildStdout>,
    out: mpsc::Sender<Result<Line, String>>,
) {
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    loop {
        let next = match lines.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => continue,
            Ok(Some(line)) => stream::read(&line).map_err(|e| e.to_string()),
            Ok(None) => Err("its output closed".into()),
            Err(e) => Err(format!("its output cannot be read: {e}")),
        };
        let last = next.is_err();
        if out.send(next).await.is_err() || last {
            return;
        }
    }
}
