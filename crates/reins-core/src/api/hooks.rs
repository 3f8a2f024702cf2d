//! Claude Code under Reins through its hooks: `reins hook claude-code` answers each `PreToolUse`
//! with Reins' decision and records each `PostToolUse`; `reins hooks install|uninstall` puts Reins'
//! entries into Claude Code's settings and takes them out (the app's Settings offers the same).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::Reins;
use crate::agent::claude::hook::{Event, Input};
use crate::agent::claude::{settings, transcript, Request, Spec};
use crate::engine::Offer;
use crate::error::{Error, Result};
use crate::ids::RunId;

pub use crate::agent::claude::hook::Answer as HookAnswer;
pub use crate::agent::claude::settings::{Change as SettingsChange, Scope as SettingsScope};

/// Largest hook input read (stdin).
pub const MAX_HOOK_INPUT: usize = crate::agent::claude::hook::MAX_INPUT_BYTES;

/// How long a hook waits for a person by default: a little under Claude Code's longest timeout
/// (600 s, which Reins installs), so the hook answers before Claude Code gives up on it.
pub const DEFAULT_HOOK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(590);
/// How long a `PostToolUse` record may wait for a busy run before it is given up.
const POST_DEADLINE_MS: i64 = 5_000;

/// What one hook call came to.
#[derive(Debug)]
pub struct HookOutcome {
    /// The session's run; None for a `SessionEnd` of a session with no run still open.
    pub run: Option<RunId>,
    /// The answer (`PreToolUse`); None for a `PostToolUse`, which answers nothing.
    pub answer: Option<HookAnswer>,
}

impl Reins {
    /// Answers one Claude Code hook call (`text`: what it wrote on stdin), waiting for a person
    /// until `deadline` at most.
    ///
    /// `headless`: the hook Reins gives a session it runs headless (`reins run --claude`). It
    /// judges every call, and when a person must decide it puts the card in the inbox and answers
    /// "ask", so Claude Code asks on its control channel, where Reins waits on the card. Such a
    /// session is recorded from its stream, so the hooks a user installed record nothing for it.
    pub async fn claude_hook(
        &self,
        text: &str,
        deadline: std::time::Duration,
        headless: bool,
    ) -> Result<HookOutcome> {
        let input = Input::parse(text).map_err(|e| Error::Invalid(e.to_string()))?;
        let runs_headless = std::env::var(super::claude_launch::HEADLESS_ENV)
            .ok()
            .as_deref()
            == Some(input.session_id.as_str());
        if (runs_headless && !headless) || (headless && input.hook_event_name != Event::PreToolUse)
        {
            return Ok(HookOutcome {
                run: None,
                answer: None,
            });
        }
        if input.hook_event_name == Event::SessionEnd {
            return self.claude_session_end(&input).await;
        }
        let run = self
            .engine
            .claude_session_run(&Spec {
                session_id: input.session_id.clone(),
                cwd: input.cwd.clone(),
                headless: None,
            })
            .await?;
        let until =
            crate::clock::now_ms() + i64::try_from(deadline.as_millis()).unwrap_or(i64::MAX / 2);
        match input.hook_event_name {
            Event::PreToolUse => {
                let why = match input.transcript_path.as_deref() {
                    Some(p) => transcript_for(Path::new(p), input.tool_use_id.as_deref())
                        .await
                        .why(),
                    None => None,
                };
                let report = input.report();
                if headless {
                    if let Some(answer) = self.carried_call(run, &report).await? {
                        return Ok(HookOutcome {
                            run: Some(run),
                            answer: Some(answer),
                        });
                    }
                }
                // The same call asked again (Claude Code started again on the session, or
                // retrying) is answered by the card it already has.
                let offer = match self.engine.unanswered_offer(run).await? {
                    Some((seq, args)) if same_call(&args, &report) => Offer::answering(seq),
                    _ => Offer::new(to_value(&Request::Pre {
                        tool_use_id: input.call_id(),
                        call: crate::action::ToolCall {
                            tool: crate::action::permission::TOOL.into(),
                            args: report,
                        },
                        why,
                    })?),
                };
                let answer = self
                    .engine
                    .decide_offer(run, &offer, until, !headless, &crate::progress::Silent)
                    .await?;
                Ok(HookOutcome {
                    run: Some(run),
                    answer: Some(answer),
                })
            }
            Event::PostToolUse => {
                let offer = Offer::new(to_value(&Request::Post {
                    detail: post_detail(&input),
                })?);
                let until = until.min(crate::clock::now_ms() + POST_DEADLINE_MS);
                self.engine
                    .record_offer(run, &offer, until, &crate::progress::Silent)
                    .await?;
                Ok(HookOutcome {
                    run: Some(run),
                    answer: None,
                })
            }
            Event::SessionEnd => self.claude_session_end(&input).await,
        }
    }

    /// A headless session started again asks for the call whose card outlived the Reins that
    /// asked (its step in [`super::claude_launch::CARRIED_ENV`]): it is left to the control channel,
    /// where the card answers it once. "Ask" sends it there.
    async fn carried_call(&self, run: RunId, report: &Value) -> Result<Option<HookAnswer>> {
        let Some(seq) = std::env::var(super::claude_launch::CARRIED_ENV)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
        else {
            return Ok(None);
        };
        let proposed = self.engine.offered_call(run, seq).await?;
        Ok(proposed
            .filter(|args| same_call(args, report))
            .map(|_| HookAnswer::Ask {
                reason: format!("the card of step {seq} in Reins answers this call"),
            }))
    }

    /// `SessionEnd`: the session's run finishes (a card still waiting is expired).
    async fn claude_session_end(&self, input: &Input) -> Result<HookOutcome> {
        let until = crate::clock::now_ms() + POST_DEADLINE_MS;
        let run = self
            .engine
            .end_claude_session(
                &input.session_id,
                &session_ended(input.reason.as_deref()),
                until,
            )
            .await?;
        Ok(HookOutcome { run, answer: None })
    }

    /// The hook command this Reins installs: this program, with this data dir.
    pub fn claude_hook_command(&self, program: &Path) -> String {
        let quote = |s: &str| shell_words::quote(s).into_owned();
        format!(
            "{} --data-dir {}{}",
            quote(&program.to_string_lossy()),
            quote(&self.data_dir().to_string_lossy()),
            settings::MARK
        )
    }
}

/// Claude Code on this machine and Reins' hooks in one settings file, for the app's Settings.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ClaudeHooksView {
    /// Where `claude` is on `PATH`, if it is.
    pub claude: Option<String>,
    /// The settings file looked at.
    pub file: String,
    /// The command of Reins' hook there, when installed.
    pub installed: Option<String>,
}

/// Claude Code on `PATH` and Reins' hooks in the settings of `scope`.
pub fn claude_hooks_view(scope: &SettingsScope) -> Result<ClaudeHooksView> {
    let file = scope.file();
    let installed = settings::installed(&file).map_err(|e| Error::Invalid(e.to_string()))?;
    let claude = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("claude"))
            .find(|p| p.is_file())
            .map(|p| p.display().to_string())
    });
    Ok(ClaudeHooksView {
        claude,
        file: file.display().to_string(),
        installed,
    })
}

/// The scope a face names: a project folder (which must exist), or the user's.
pub fn claude_scope(project: Option<&str>) -> Result<SettingsScope> {
    match project.map(str::trim).filter(|p| !p.is_empty()) {
        None => user_scope(),
        Some(dir) => {
            let path = Path::new(dir);
            if !path.is_absolute() {
                return Err(Error::Invalid(format!(
                    "the project folder must be an absolute path: {dir}"
                )));
            }
            let dir = path
                .canonicalize()
                .map_err(|e| Error::Invalid(format!("the project folder {dir}: {e}")))?;
            if !dir.is_dir() {
                return Err(Error::Invalid(format!("{} is not a folder", dir.display())));
            }
            Ok(SettingsScope::Project(dir))
        }
    }
}

/// Reins' hooks added to the settings of `scope`, running `command`: the change, not yet written.
pub fn claude_hooks_install(scope: &SettingsScope, command: &str) -> Result<SettingsChange> {
    settings::install(&scope.file(), command).map_err(|e| Error::Invalid(e.to_string()))
}

/// Reins' hooks taken out of the settings of `scope`: the change, not yet written.
pub fn claude_hooks_uninstall(scope: &SettingsScope) -> Result<SettingsChange> {
    settings::uninstall(&scope.file()).map_err(|e| Error::Invalid(e.to_string()))
}

/// Writes a change worked out by [`claude_hooks_install`] or [`claude_hooks_uninstall`].
pub fn write_settings(change: &SettingsChange) -> Result<()> {
    change.write().map_err(|e| Error::Invalid(e.to_string()))
}

/// The user's scope: `~/.claude/settings.json`.
pub fn user_scope() -> Result<SettingsScope> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| SettingsScope::User(PathBuf::from(h)))
        .ok_or_else(|| Error::Invalid("HOME is not set: say --project DIR instead".into()))
}

/// The transcript's tail once it shows tool call `tool_use_id`: Claude Code may call the hook
/// before the call's own entry, and the words before it, are on disk. Waits half a second at most;
/// then the card does with what is there.
async fn transcript_for(path: &Path, tool_use_id: Option<&str>) -> transcript::Tail {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(500);
    loop {
        let text = transcript::tail_text(path);
        let shown = match (&text, tool_use_id) {
            (Some(t), Some(id)) => t.contains(id),
            (_, None) => true,
            (None, Some(_)) => false,
        };
        if shown || std::time::Instant::now() >= until {
            return text.map(|t| transcript::of_lines(&t)).unwrap_or_default();
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// Whether a call proposed earlier (`proposed`, its step's arguments) is the call `asked` reports.
pub(super) fn same_call(proposed: &Value, asked: &Value) -> bool {
    proposed["rawInput"] == asked["rawInput"] && proposed["title"] == asked["title"]
}

/// A session run's last words, from Claude Code's reason for ending it.
fn session_ended(reason: Option<&str>) -> String {
    let why = match reason {
        Some("prompt_input_exit") => "the person left Claude Code",
        Some("clear") => "the person cleared the conversation (/clear)",
        Some("logout") => "the person logged out",
        Some("resume") => "the person switched to another session (/resume)",
        Some("bypass_permissions_disabled") => "bypass-permissions mode was turned off",
        _ => "Claude Code exited",
    };
    format!("The Claude Code session ended: {why}.")
}

fn to_value(request: &Request) -> Result<Value> {
    serde_json::to_value(request).map_err(|e| Error::Invalid(e.to_string()))
}

/// What a `PostToolUse` tells: the tool, whether it worked, and for a file tool the file's hash now.
pub(super) fn post_detail(input: &Input) -> Value {
    let response = input.tool_response.clone().unwrap_or(Value::Null);
    let ok = !(response.get("is_error").and_then(Value::as_bool) == Some(true)
        || response.get("error").is_some_and(|e| !e.is_null())
        || response.get("success").and_then(Value::as_bool) == Some(false));
    let mut detail = json!({
        "toolUseId": input.call_id(),
        "tool": input.tool_name,
        "ok": ok,
    });
    let file = ["file_path", "notebook_path"]
        .into_iter()
        .find_map(|k| input.tool_input.get(k).and_then(Value::as_str));
    if let Some(path) = file {
        detail["path"] = path.into();
        if matches!(
            input.tool_name.as_str(),
            "Write" | "Edit" | "MultiEdit" | "NotebookEdit"
        ) {
            detail["sha256"] = match std::fs::read(path) {
                Ok(bytes) => crate::digest::Digest::of(&bytes).to_string().into(),
                Err(_) => Value::Null,
            };
        }
    }
    if let Some(code) = response
        .get("exitCode")
        .or_else(|| response.get("exit_code"))
    {
        detail["exitCode"] = code.clone();
    }
    detail
}
