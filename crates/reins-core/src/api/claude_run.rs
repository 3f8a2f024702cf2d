//! Headless Claude Code under Reins: `reins run --claude GOAL` starts `claude -p` on its stream-json
//! channel with permission asks routed to Reins (`--permission-prompt-tool stdio`). Each ask is
//! decided by the same path as a `PreToolUse` hook's — the session's run, the policy, the inbox —
//! and each tool result, message and the turn's end with its token usage go on the run's timeline.
//!
//! The process cannot be checkpointed; the session can (Claude Code keeps it on disk). If Reins
//! stops while a card waits, the card stays in the inbox: `--resume SESSION` starts Claude Code on
//! the same session, and when it asks for the same call again the card's decision answers it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

use super::claude_launch::{find_program, CARRIED_ENV, HEADLESS_ENV};
use super::Reins;
use crate::agent::claude::hook::{Answer, Event, Input};
use crate::agent::claude::stream::{self, Line, ToolUse};
use crate::agent::claude::{Headless, Request, Spec};
use crate::engine::{Observer, Offer, Progress};
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::run::RunState;

/// How long a permission ask waits for a person by default.
pub const DEFAULT_REVIEW_DEADLINE: Duration = Duration::from_secs(24 * 3600);
/// How often the run's state is looked at (a cancel or a pause from another face).
const WATCH: Duration = Duration::from_millis(500);
/// How long a record (a message, a tool result) may wait for a busy run.
const RECORD_DEADLINE_MS: i64 = 10_000;
/// What Claude Code is told when it resumes without a new goal.
const CARRY_ON: &str = "Reins was restarted while you worked. Carry on with your task where you left off; a tool call that got no answer may be made again.";

/// A headless Claude Code run to start or resume.
#[derive(Clone, Debug, Default)]
pub struct ClaudeRunRequest {
    /// The task; required for a new session.
    pub goal: Option<String>,
    /// The session to resume.
    pub resume: Option<String>,
    /// The `claude` program [default: `claude` on PATH].
    pub program: Option<PathBuf>,
    /// Environment variables set from the keyring: variable → key name.
    pub env: BTreeMap<String, String>,
    /// Environment variables passed through from Reins' own environment, by name.
    pub pass_env: Vec<String>,
    /// How long one permission ask waits for a decision before it is denied.
    pub review_deadline: Option<Duration>,
    /// Where Claude Code's stderr is logged (bounded, redacted); none: kept in memory only.
    pub log: Option<PathBuf>,
    /// Stop Claude Code as soon as an ask waits for a person (`--no-wait`, a worker): the card
    /// stays in the inbox, and once it is decided a worker starts the session again.
    pub stop_at_card: bool,
}

/// Where a headless session ended.
#[derive(Clone, Debug)]
pub struct ClaudeRunOutcome {
    pub run: RunId,
    pub session: String,
    pub state: RunState,
    /// Claude Code's last words, or why it stopped.
    pub summary: String,
}

impl Reins {
    /// Runs Claude Code headless on `workspace` until its turn ends, the run is cancelled or
    /// paused, or Reins is asked to stop (then the session can be resumed).
    pub async fn run_claude(
        &self,
        req: ClaudeRunRequest,
        workspace: &Path,
        obs: &dyn Observer,
    ) -> Result<ClaudeRunOutcome> {
        let cwd = workspace
            .canonicalize()
            .map_err(|e| Error::Invalid(format!("the workspace {}: {e}", workspace.display())))?;
        let cwd_text = cwd.to_string_lossy().into_owned();
        let session = match &req.resume {
            Some(id) => {
                if id.is_empty()
                    || id.len() > 200
                    || !id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(Error::Invalid(format!(
                        "{id:?} is not a Claude Code session id"
                    )));
                }
                id.clone()
            }
            None => uuid::Uuid::new_v4().to_string(),
        };
        let prompt = match (&req.goal, &req.resume) {
            (Some(goal), _) if !goal.trim().is_empty() => goal.clone(),
            (_, Some(_)) => CARRY_ON.to_owned(),
            _ => return Err(Error::Invalid("give Claude Code a goal".into())),
        };
        let program = find_program(req.program.as_deref().unwrap_or(Path::new("claude")))
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "Claude Code (`{}`) is not installed here: `npm i -g @anthropic-ai/claude-code`, or say --claude-program PATH",
                    req.program.as_deref().unwrap_or(Path::new("claude")).display()
                ))
            })?;
        let keys = self.claude_keys(&req.env).await?;
        // Claude Code asks on its channel only for the calls its own rules do not let through
        // (reads, `ls`, its allow list): Reins' hook judges every call first.
        let (hook, config_dir) = self.headless_hook()?;
        let spec = Spec {
            session_id: session.clone(),
            cwd: cwd_text.clone(),
            headless: Some(Headless {
                program: program.to_string_lossy().into_owned(),
                env: req.env.clone(),
                pass_env: req.pass_env.clone(),
                review_deadline_s: req.review_deadline.map(|d| d.as_secs()),
            }),
        };
        // One Claude Code per session: a second `reins run --resume`, or a worker, is refused
        // while this one runs. The lock goes with this process, however it ends.
        let _session = self.claude_session_lock(&session)?;
        let run = self.engine.claude_session_run(&spec).await?;
        // The call whose card outlived the Reins that asked, captured before anything records
        // (a record drives the run, and carries an approved card out): when the resumed Claude
        // Code asks for it again, the card's decision answers it.
        let mut carried = self.engine.unanswered_offer(run).await?;
        let carried_seq = carried
            .as_ref()
            .map(|(seq, _)| seq.to_string())
            .unwrap_or_default();
        obs.on(&Progress::Created {
            run,
            name: Spec::run_name(&session),
            workspace: cwd_text.clone(),
        });
        if self.run_state(run).await? == RunState::Paused {
            self.resume(run, crate::engine::ResumeMode::Continue)
                .await?;
        }

        // Claude Code dies with this Reins (killed or crashed) instead of going on unheard: its
        // asks would go nowhere, and its session is resumed from disk anyway.
        let mut argv: Vec<String> = match find_program(Path::new("setpriv")) {
            Some(setpriv) => vec![
                setpriv.to_string_lossy().into_owned(),
                "--pdeathsig".into(),
                "KILL".into(),
                "--".into(),
            ],
            None => Vec::new(),
        };
        argv.extend([
            program.to_string_lossy().into_owned(),
            "-p".into(),
            "--input-format".into(),
            "stream-json".into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
            "--permission-prompt-tool".into(),
            "stdio".into(),
        ]);
        match &req.resume {
            Some(id) => argv.extend(["--resume".into(), id.clone()]),
            None => argv.extend(["--session-id".into(), session.clone()]),
        }
        argv.extend(["--settings".into(), hook.to_string()]);
        let config_dir = config_dir.to_string_lossy().into_owned();
        let (mut piped, mut stdin, stdout) =
            crate::process::spawn_piped(crate::process::PipedSpec {
                argv: &argv,
                root: &cwd,
                base_env: crate::agent::acp::session::BASE_ENV,
                passed: &req.pass_env,
                // Reins' own hooks, when installed, leave this session's asks to the channel.
                set: &[
                    (HEADLESS_ENV, &session),
                    (crate::data_dir::CONFIG_DIR_ENV, &config_dir),
                    (CARRIED_ENV, &carried_seq),
                ],
                keys: &keys,
                log: req.log.clone(),
            })
            .map_err(|e| {
                Error::Invalid(match e {
                    crate::process::PipedError::Spawn { program, source } => {
                        format!("cannot start Claude Code (`{program}`): {source}")
                    }
                    other => format!("cannot start Claude Code: {other:?}"),
                })
            })?;
        send(&mut stdin, &stream::user_message(&prompt)).await?;

        let deadline = req.review_deadline.unwrap_or(DEFAULT_REVIEW_DEADLINE);
        let told = Told(obs);
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let mut uses: BTreeMap<String, ToolUse> = BTreeMap::new();
        let mut said = String::new();
        // What Claude Code said and did, recorded while the run waits for its next call. A record
        // never drives a run that is deciding a call: that would carry an approved card out
        // before the ask it answers has found it.
        let mut unrecorded: std::collections::VecDeque<Request> = Default::default();
        let mut watch = tokio::time::interval(WATCH);
        let stopped = |state: RunState, summary: String| ClaudeRunOutcome {
            run,
            session: session.clone(),
            state,
            summary,
        };
        loop {
            let line = tokio::select! {
                line = lines.next_line() => line,
                _ = watch.tick() => {
                    let state = self.run_state(run).await?;
                    if matches!(state, RunState::Cancelled | RunState::Paused) || self.draining() {
                        drop(piped);
                        let why = if self.draining() {
                            "Reins was asked to stop".to_owned()
                        } else {
                            format!("the run was {state} in Reins")
                        };
                        return Ok(stopped(self.run_state(run).await?, why));
                    }
                    continue;
                }
            };
            let line = match line {
                Ok(Some(line)) if line.trim().is_empty() => continue,
                Ok(Some(line)) => line,
                Ok(None) | Err(_) => {
                    let tail = piped.stderr.text(2000);
                    let running = piped.running();
                    drop(piped);
                    return Ok(stopped(
                        self.run_state(run).await?,
                        format!(
                            "Claude Code {} before its turn ended{}",
                            if running {
                                "closed its output"
                            } else {
                                "exited"
                            },
                            if tail.trim().is_empty() {
                                String::new()
                            } else {
                                format!(": {}", tail.trim())
                            }
                        ),
                    ));
                }
            };
            let line = stream::read(&line).map_err(|e| Error::Invalid(e.to_string()))?;
            match line {
                Line::Init { session_id } if session_id != session => {
                    return Err(Error::Invalid(format!(
                        "Claude Code started session {session_id}, not {session}"
                    )));
                }
                Line::Init { .. } | Line::Other => {}
                Line::Assistant { text, tool_uses } => {
                    if !text.trim().is_empty() {
                        obs.on(&Progress::Text {
                            text: format!("{}\n", text.trim_end()),
                        });
                        unrecorded.push_back(Request::Said { text: text.clone() });
                        self.record_now(run, &mut unrecorded).await?;
                        said = text;
                    }
                    for u in tool_uses {
                        uses.insert(u.id.clone(), u);
                    }
                }
                Line::Permission {
                    request_id,
                    tool_name,
                    input,
                    tool_use_id,
                } => {
                    let ask = Input {
                        session_id: session.clone(),
                        transcript_path: None,
                        cwd: cwd_text.clone(),
                        hook_event_name: Event::PreToolUse,
                        tool_name,
                        tool_input: input.clone(),
                        tool_use_id,
                        tool_response: None,
                        reason: None,
                    };
                    let report = ask.report();
                    // The card that outlived the Reins that asked (taken once: the same call
                    // asked again later is judged again), or the one Reins' hook just put in the
                    // inbox for this call: the ask waits on it.
                    let outlived = carried
                        .take_if(|(_, args)| super::hooks::same_call(args, &report))
                        .map(|(seq, _)| seq);
                    let waiting = match outlived {
                        Some(seq) => Some(seq),
                        None => self
                            .engine
                            .unanswered_offer(run)
                            .await?
                            .filter(|(_, args)| super::hooks::same_call(args, &report))
                            .map(|(seq, _)| seq),
                    };
                    let offer = match waiting {
                        Some(seq) => Offer::answering(seq),
                        None => Offer::new(to_value(&Request::Pre {
                            tool_use_id: ask.call_id(),
                            call: crate::action::ToolCall {
                                tool: crate::action::permission::TOOL.into(),
                                args: report,
                            },
                            why: Some(said.clone()).filter(|s| !s.trim().is_empty()),
                        })?),
                    };
                    let until = crate::clock::now_ms()
                        + i64::try_from(deadline.as_millis()).unwrap_or(i64::MAX / 4);
                    let decided = self.engine.decide_offer(run, &offer, until, true, &told);
                    let answer = tokio::select! {
                        answer = decided => answer?,
                        () = self.until_card(run), if req.stop_at_card => {
                            drop(piped);
                            return Ok(stopped(
                                self.run_state(run).await?,
                                "a tool call waits for a person".into(),
                            ));
                        }
                        () = self.until_draining() => {
                            drop(piped);
                            return Ok(stopped(
                                self.run_state(run).await?,
                                "Reins was asked to stop while a tool call waited; its card stays in the inbox and answers the call when the session is resumed".into(),
                            ));
                        }
                    };
                    let reply = match &answer {
                        Answer::Allow { input: edited, .. } => {
                            stream::allow(&request_id, edited.as_ref().unwrap_or(&input))
                        }
                        // Waiting, Reins never answers "ask"; were it to, the call is refused.
                        Answer::Deny { reason } | Answer::Ask { reason } => {
                            stream::deny(&request_id, reason)
                        }
                    };
                    send(&mut stdin, &reply).await?;
                    self.record_now(run, &mut unrecorded).await?;
                }
                Line::Control {
                    request_id,
                    subtype,
                } => send(&mut stdin, &stream::refuse(&request_id, &subtype)).await?,
                Line::ToolResults(results) => {
                    for r in results {
                        let Some(used) = uses.remove(&r.tool_use_id) else {
                            continue;
                        };
                        let mut response = if r.detail.is_object() {
                            r.detail
                        } else {
                            json!({})
                        };
                        if r.is_error {
                            response["is_error"] = true.into();
                        }
                        let done = Input {
                            session_id: session.clone(),
                            transcript_path: None,
                            cwd: cwd_text.clone(),
                            hook_event_name: Event::PostToolUse,
                            tool_name: used.name,
                            tool_input: used.input,
                            tool_use_id: Some(used.id),
                            tool_response: Some(response),
                            reason: None,
                        };
                        let detail = super::hooks::post_detail(&done);
                        unrecorded.push_back(Request::Post { detail });
                        self.record_now(run, &mut unrecorded).await?;
                    }
                }
                Line::Result {
                    ok,
                    text,
                    usage,
                    cost_usd,
                } => {
                    let usage = json!({"usage": usage, "costUsd": cost_usd});
                    let summary = if text.trim().is_empty() {
                        said.clone()
                    } else {
                        text
                    };
                    for request in std::mem::take(&mut unrecorded) {
                        self.record(run, request).await?;
                    }
                    self.record(
                        run,
                        Request::End {
                            ok,
                            summary: summary.clone(),
                            usage,
                        },
                    )
                    .await?;
                    drop(stdin);
                    let _ = tokio::time::timeout(Duration::from_secs(10), piped.child.wait()).await;
                    let state = self.run_state(run).await?;
                    obs.on(&Progress::Finished {
                        state,
                        summary: summary.clone(),
                    });
                    return Ok(stopped(state, summary));
                }
            }
        }
    }

    /// Returns once run `run` waits on a card (or can no longer be looked at).
    async fn until_card(&self, run: RunId) {
        while matches!(self.run_state(run).await, Ok(s) if s != RunState::AwaitingApproval) {
            tokio::time::sleep(WATCH).await;
        }
    }

    /// Returns once Reins is asked to stop (Ctrl-C, SIGTERM).
    async fn until_draining(&self) {
        while !self.draining() {
            tokio::time::sleep(WATCH).await;
        }
    }

    /// Records what waits in `unrecorded`, in order, while the run waits for Claude Code's next
    /// call; the rest stays for later.
    async fn record_now(
        &self,
        run: RunId,
        unrecorded: &mut std::collections::VecDeque<Request>,
    ) -> Result<()> {
        while let Some(request) = unrecorded.front() {
            let offer = Offer::new(to_value(request)?);
            if !self
                .engine
                .record_if_attached(run, &offer, &crate::progress::Silent)
                .await?
            {
                break;
            }
            unrecorded.pop_front();
        }
        Ok(())
    }

    /// Records what Claude Code said or did (no decision: nothing to tell the person watching).
    async fn record(&self, run: RunId, request: Request) -> Result<()> {
        let offer = Offer::new(to_value(&request)?);
        let until = crate::clock::now_ms() + RECORD_DEADLINE_MS;
        self.engine
            .record_offer(run, &offer, until, &crate::progress::Silent)
            .await?;
        Ok(())
    }
}

/// What the person watching a headless session is told of a decision: the step and a wait for a
/// person, not the attempts each tool call takes or the run going back to waiting for Claude Code.
struct Told<'a>(&'a dyn Observer);

impl Observer for Told<'_> {
    fn on(&self, progress: &Progress) {
        match progress {
            Progress::Attempt { .. }
            | Progress::Recovered { .. }
            | Progress::Waiting {
                state: RunState::Attached,
                ..
            } => {}
            other => self.0.on(other),
        }
    }
}

async fn send(stdin: &mut tokio::process::ChildStdin, line: &str) -> Result<()> {
    let mut bytes = line.as_bytes().to_vec();
    bytes.push(b'\n');
    stdin
        .write_all(&bytes)
        .await
        .map_err(|e| Error::Invalid(format!("Claude Code stopped reading its input: {e}")))?;
    stdin
        .flush()
        .await
        .map_err(|e| Error::Invalid(format!("Claude Code stopped reading its input: {e}")))
}

fn to_value(request: &Request) -> Result<Value> {
    serde_json::to_value(request).map_err(|e| Error::Invalid(e.to_string()))
}
