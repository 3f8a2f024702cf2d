//! What a Claude Code hook sends (`PreToolUse`, `PostToolUse`, `SessionEnd` on stdin), what Reins
//! reads it as, and what it answers. A tool call is reported to the policy as an external agent's permission
//! request (`agent.permission`) whose kind says what Reins reads it as: `Bash` is a command for the
//! shell classifier; `Write`, `Edit`, `MultiEdit`, `NotebookEdit` are file changes (the whole new
//! text worked out from the file on disk); `Read`, `Grep`, `Glob`, `LS` are reads; `mcp__SERVER__TOOL`
//! is a call of an MCP server's tool, judged by the MCP rules; anything else — the web, tools Reins
//! does not know — is a kind Reins cannot read, so high risk.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::agent::{Answer, Asked, Outside};

/// Largest hook input read.
pub const MAX_INPUT_BYTES: usize = 10 * 1024 * 1024;

/// The hook events Reins installs itself on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Event {
    PreToolUse,
    PostToolUse,
    /// The session ended: Claude Code exited, or the person cleared the conversation or logged
    /// out. Its run finishes.
    SessionEnd,
}

/// One hook call as Claude Code sends it (fields Reins does not use are ignored: Claude Code adds
/// some in new versions).
#[derive(Clone, Debug, Deserialize)]
pub struct Input {
    pub session_id: String,
    #[serde(default)]
    pub transcript_path: Option<String>,
    pub cwd: String,
    pub hook_event_name: Event,
    /// The tool (`PreToolUse`, `PostToolUse`; empty for `SessionEnd`).
    #[serde(default)]
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    #[serde(default)]
    pub tool_response: Option<Value>,
    /// Why the session ended (`SessionEnd`): `clear`, `logout`, `prompt_input_exit`, `other`…
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("the hook's input cannot be read: {0}")]
pub struct InputError(pub String);

impl Input {
    pub fn parse(text: &str) -> Result<Self, InputError> {
        if text.len() > MAX_INPUT_BYTES {
            return Err(InputError("it is over 10 MiB".into()));
        }
        let input: Input = serde_json::from_str(text).map_err(|e| InputError(e.to_string()))?;
        let bad = |what: &str| Err(InputError(what.into()));
        if input.session_id.is_empty()
            || input.session_id.len() > 200
            || !input.session_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return bad("`session_id` must be 1 to 200 letters, digits, `-` or `_`");
        }
        if !std::path::Path::new(&input.cwd).is_absolute() {
            return bad("`cwd` must be an absolute path");
        }
        if input.hook_event_name == Event::SessionEnd {
            if input.reason.as_ref().is_some_and(|r| r.len() > 200) {
                return bad("`reason` must be at most 200 characters");
            }
            return Ok(input);
        }
        if input.tool_name.is_empty() || input.tool_name.len() > 200 {
            return bad("`tool_name` must be 1 to 200 characters");
        }
        if !input.tool_input.is_object() {
            return bad("`tool_input` must be an object");
        }
        Ok(input)
    }

    /// The tool call's id, or one made of the call itself when Claude Code sends none.
    pub fn call_id(&self) -> String {
        self.tool_use_id.clone().unwrap_or_else(|| {
            crate::digest::Digest::of(
                format!("{}\n{}", self.tool_name, self.tool_input).as_bytes(),
            )
            .to_string()
        })
    }

    /// The call as an external agent's permission request (`{kind, title, rawInput, content}`):
    /// `rawInput` is the tool's input as sent, so an edited approval can be handed back as it.
    pub fn report(&self) -> Value {
        let input = &self.tool_input;
        let kind = match self.tool_name.as_str() {
            "Bash" => "execute",
            "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => "edit",
            "Read" => "read",
            "Grep" => "search",
            "Glob" | "LS" => "list",
            "WebFetch" | "WebSearch" => "fetch",
            t if t.starts_with("mcp__") => "mcp",
            _ => "other",
        };
        let mut report = Map::new();
        report.insert("kind".into(), kind.into());
        report.insert("title".into(), self.tool_name.clone().into());
        let raw = match self.tool_name.as_str() {
            // Where Claude Code searches or lists when it names no place: the session's folder.
            "Grep" | "Glob" | "LS" if input.get("path").is_none() => {
                let mut i = input.clone();
                i["path"] = self.cwd.clone().into();
                i
            }
            _ => input.clone(),
        };
        report.insert("rawInput".into(), raw);
        if let Some(diff) = self.whole_new_text() {
            report.insert("content".into(), json!([diff]));
        }
        Value::Object(report)
    }

    /// For an edit Reins cannot read from its input alone (several replacements, one made
    /// everywhere, a notebook's cell), the file's whole new text worked out from the disk, as a diff.
    fn whole_new_text(&self) -> Option<Value> {
        let input = &self.tool_input;
        if self.tool_name == "NotebookEdit" {
            let path = input.get("notebook_path")?.as_str()?;
            let old = std::fs::read_to_string(path).ok()?;
            // A notebook edit that does not apply is left unread, as below.
            let new = super::notebook::edited(&old, input).ok()?;
            return Some(json!({"type": "diff", "path": path, "oldText": old, "newText": new}));
        }
        let path = input.get("file_path")?.as_str()?;
        let edits: Vec<(&str, &str, bool)> = match self.tool_name.as_str() {
            "Edit" if input.get("replace_all").and_then(Value::as_bool) == Some(true) => {
                vec![(input.get("old_string")?.as_str()?, input.get("new_string")?.as_str()?, true)]
            }
            "MultiEdit" => input
                .get("edits")?
                .as_array()?
                .iter()
                .map(|e| {
                    Some((
                        e.get("old_string")?.as_str()?,
                        e.get("new_string")?.as_str()?,
                        e.get("replace_all").and_then(Value::as_bool) == Some(true),
                    ))
                })
                .collect::<Option<_>>()?,
            _ => return None,
        };
        let old = std::fs::read_to_string(path).ok()?;
        let mut new = old.clone();
        for (from, to, all) in edits {
            // An edit that does not apply as Claude Code would apply it leaves the call unread.
            if from.is_empty() || !new.contains(from) || (!all && new.matches(from).count() != 1) {
                return None;
            }
            new = if all { new.replace(from, to) } else { new.replacen(from, to, 1) };
        }
        Some(json!({"type": "diff", "path": path, "oldText": old, "newText": new}))
    }
}

/// The hook's stdout for Reins' answer to a `PreToolUse`.
pub fn output(answer: &Answer) -> Value {
    let mut out = json!({"hookEventName": "PreToolUse"});
    let (decision, reason) = match answer {
        Answer::Allow { reason, input } => {
            if let Some(input) = input {
                out["updatedInput"] = input.clone();
            }
            ("allow", reason)
        }
        Answer::Deny { reason } => ("deny", reason),
        Answer::Ask { reason } => ("ask", reason),
    };
    out["permissionDecision"] = decision.into();
    out["permissionDecisionReason"] = reason.clone().into();
    json!({ "hookSpecificOutput": out })
}

/// One hook call as a request of the session's run. `headless`: the hook Reins gives a session it
/// runs headless (`reins run --claude`): it judges every call, and when a person must decide it
/// answers "ask" as soon as the card is in the inbox, so Claude Code asks on its control channel,
/// where the card answers it. Such a session is recorded from its stream, so the hooks a user
/// installed record nothing for it.
pub async fn outside(text: &str, headless: bool) -> Result<Outside, InputError> {
    let input = Input::parse(text)?;
    let runs_headless =
        std::env::var(super::HEADLESS_ENV).ok().as_deref() == Some(input.session_id.as_str());
    let spec = super::Spec {
        session_id: input.session_id.clone(),
        cwd: input.cwd.clone(),
        headless: None,
    };
    let ignored = (runs_headless && !headless)
        || (headless && input.hook_event_name != Event::PreToolUse);
    let to_value = |r: &super::Request| {
        serde_json::to_value(r).map_err(|e| InputError(e.to_string()))
    };
    let asked = match input.hook_event_name {
        _ if ignored => Asked::Nothing,
        Event::PreToolUse => {
            let why = match input.transcript_path.as_deref() {
                Some(p) => super::transcript::tail_for(std::path::Path::new(p), input.tool_use_id.as_deref())
                    .await
                    .why(),
                None => None,
            };
            let report = input.report();
            // A headless session started again asks for the call whose card a person decided
            // meanwhile: that card answers it on the channel.
            let carried = headless
                .then(|| std::env::var(super::CARRIED_ENV).ok()?.parse::<i64>().ok())
                .flatten();
            let request = to_value(&super::Request::Pre {
                tool_use_id: input.call_id(),
                call: crate::action::ToolCall {
                    tool: crate::action::permission::TOOL.into(),
                    args: report.clone(),
                },
                why,
            })?;
            Asked::Decide {
                request,
                args: report,
                same: same_call,
                wait: !headless,
                carried,
            }
        }
        Event::PostToolUse => Asked::Record {
            request: to_value(&super::Request::Post {
                detail: post_detail(&input),
            })?,
        },
        Event::SessionEnd => Asked::End {
            request: to_value(&super::Request::End {
                ok: true,
                summary: session_ended(input.reason.as_deref()),
                usage: Value::Null,
            })?,
        },
    };
    Ok(Outside {
        session: spec.new_run(),
        workspace: std::path::PathBuf::from(&input.cwd),
        asked,
    })
}

/// Whether a call proposed earlier (`proposed`, its step's arguments) is the call `asked` reports.
pub fn same_call(proposed: &Value, asked: &Value) -> bool {
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

/// What a `PostToolUse` tells: the tool, whether it worked, and for a file tool the file's hash now.
pub fn post_detail(input: &Input) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn input(tool: &str, tool_input: Value) -> Input {
        Input::parse(
            &json!({"session_id": "abc-1", "cwd": "/w", "hook_event_name": "PreToolUse",
                "tool_name": tool, "tool_input": tool_input, "tool_use_id": "toolu_1",
                "permission_mode": "default", "something_new": 1})
            .to_string(),
        )
        .unwrap()
    }

    #[test]
    fn each_tool_is_reported_as_the_kind_reins_reads_it_as() {
        for (tool, kind) in [
            ("Bash", "execute"), ("Write", "edit"), ("Edit", "edit"), ("Read", "read"),
            ("Grep", "search"), ("Glob", "list"), ("LS", "list"), ("WebFetch", "fetch"),
            ("mcp__github__create_issue", "mcp"), ("Task", "other"), ("TodoWrite", "other"),
        ] {
            let r = input(tool, json!({})).report();
            assert_eq!((r["kind"].as_str(), r["title"].as_str()), (Some(kind), Some(tool)));
        }
        // A search names the session's folder when Claude Code names none.
        assert_eq!(input("Grep", json!({"pattern": "x"})).report()["rawInput"]["path"], "/w");
    }

    #[test]
    fn several_edits_are_reported_as_the_whole_new_text_from_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one two two\n").unwrap();
        let p = path.display().to_string();
        let multi = input("MultiEdit", json!({"file_path": p, "edits": [
            {"old_string": "one", "new_string": "1"},
            {"old_string": "two", "new_string": "2", "replace_all": true}]}));
        assert_eq!(multi.report()["content"][0]["newText"], "1 2 2\n");
        // An edit that would not apply (ambiguous) is left unread: no diff.
        let ambiguous = input("MultiEdit", json!({"file_path": p, "edits": [{"old_string": "two", "new_string": "2"}]}));
        assert!(ambiguous.report().get("content").is_none());
        let all = input("Edit", json!({"file_path": p, "old_string": "two", "new_string": "2", "replace_all": true}));
        assert_eq!(all.report()["content"][0]["newText"], "one 2 2\n");
    }

    #[test]
    fn a_notebook_edit_is_reported_as_the_notebooks_whole_new_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.ipynb");
        let old = "{\n \"cells\": [\n  {\n   \"cell_type\": \"markdown\",\n   \"id\": \"m\",\n   \"metadata\": {},\n   \"source\": \"a\"\n  }\n ]\n}\n";
        std::fs::write(&path, old).unwrap();
        let p = path.display().to_string();
        let edit = input("NotebookEdit", json!({"notebook_path": p, "cell_id": "m", "new_source": "b"}));
        let report = edit.report();
        assert_eq!(report["content"][0]["path"], p.as_str());
        assert_eq!(report["content"][0]["newText"], old.replace("\"a\"", "\"b\""));
        let missing = input("NotebookEdit", json!({"notebook_path": p, "cell_id": "zz", "new_source": "b"}));
        assert!(missing.report().get("content").is_none());
    }

    #[test]
    fn malformed_input_is_refused() {
        for bad in [
            json!({}).to_string(),
            "not json".into(),
            json!({"session_id": "../x", "cwd": "/w", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}).to_string(),
            json!({"session_id": "a", "cwd": "w", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}).to_string(),
            json!({"session_id": "a", "cwd": "/w", "hook_event_name": "Stop", "tool_name": "Bash", "tool_input": {}}).to_string(),
            json!({"session_id": "a", "cwd": "/w", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": "ls"}).to_string(),
            json!({"session_id": "a", "cwd": "/w", "hook_event_name": "PreToolUse", "tool_input": {}}).to_string(),
            json!({"session_id": "a", "cwd": "/w", "hook_event_name": "SessionEnd", "reason": "x".repeat(201)}).to_string(),
        ] {
            assert!(Input::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_session_end_names_no_tool() {
        let end = Input::parse(
            &json!({"session_id": "abc-1", "transcript_path": "/t.jsonl", "cwd": "/w",
                "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
            .to_string(),
        )
        .unwrap();
        assert_eq!(end.hook_event_name, Event::SessionEnd);
        assert_eq!(end.reason.as_deref(), Some("prompt_input_exit"));
    }

    #[test]
    fn the_answer_is_claude_codes_pre_tool_use_output() {
        let a = output(&Answer::Allow { reason: "approved".into(), input: Some(json!({"command": "ls"})) });
        assert_eq!(a["hookSpecificOutput"]["permissionDecision"], "allow");
        assert_eq!(a["hookSpecificOutput"]["updatedInput"]["command"], "ls");
        let d = output(&Answer::Deny { reason: "no".into() });
        assert_eq!(d["hookSpecificOutput"]["permissionDecisionReason"], "no");
        assert!(d["hookSpecificOutput"].get("updatedInput").is_none());
        let a = output(&Answer::Ask { reason: "a card waits".into() });
        assert_eq!(a["hookSpecificOutput"]["permissionDecision"], "ask");
    }
}
