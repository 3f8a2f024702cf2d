//! What an agent asked for. A proposed call is parsed into a typed [`Action`] (schema, size limits
//! and the path jail: step 1 of the protocol), with the canonical form a review binds to and the
//! journal records. Judging it is the policy's; doing it is the tools' (`tools`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::digest::Digest;
use crate::journal::EffectClass;
use crate::workspace::{JailError, RelPath, Workspace};

pub mod fetch;
pub mod mcp;
pub mod permission;
mod recorded;
pub mod shell;
pub use fetch::FetchRequest;
pub use mcp::McpCall;
pub use permission::Permission;
pub use recorded::RecordedCall;
pub use shell::{CommandForm, ShellCommand};

/// The pseudo-tool the model uses to ask the person something.
pub const ASK_USER: &str = "ask_user";

/// Largest file `fs.read` returns, and largest file `fs.search` looks into.
pub const READ_LIMIT: u64 = 1024 * 1024;
/// Largest content `fs.write` / `fs.edit` accept.
pub const WRITE_LIMIT: usize = 8 * 1024 * 1024;
/// Most entries `fs.list` returns.
pub const LIST_LIMIT: usize = 2000;
/// Most matching lines `fs.search` returns.
pub const SEARCH_LIMIT: usize = 200;

/// A tool call as an agent proposes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub tool: String,
    #[serde(default)]
    pub args: Value,
}

/// One built-in tool as agents and people see it. The list is hashed into a run's compatibility record.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub effect: EffectClass,
    pub args: &'static str,
    pub summary: &'static str,
}

pub const SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: "fs.read",
        effect: EffectClass::Pure,
        args: "{path}",
        summary: "read a text file (up to 1 MiB)",
    },
    ToolSpec {
        name: "fs.list",
        effect: EffectClass::Pure,
        args: "{path?, recursive?}",
        summary: "list a directory",
    },
    ToolSpec {
        name: "fs.search",
        effect: EffectClass::Pure,
        args: "{pattern, path?}",
        summary: "search files for a regular expression",
    },
    ToolSpec {
        name: "fs.write",
        effect: EffectClass::Idempotent,
        args: "{path, content}",
        summary: "create or replace a file",
    },
    ToolSpec {
        name: "fs.edit",
        effect: EffectClass::AtMostOnce,
        args: "{path, old, new}",
        summary: "replace the one occurrence of `old` with `new`",
    },
    ToolSpec {
        name: "fs.delete",
        effect: EffectClass::Idempotent,
        args: "{path}",
        summary: "delete a file",
    },
    ToolSpec {
        name: "fs.move",
        effect: EffectClass::AtMostOnce,
        args: "{from, to}",
        summary: "move a file to a path that does not exist",
    },
    ToolSpec {
        name: "shell.exec",
        effect: EffectClass::AtMostOnce,
        args: "{command | argv, timeout_s?}",
        summary: "run a command in the workspace (timeout default 120 s, output capped)",
    },
    ToolSpec {
        name: "memory.remember",
        effect: EffectClass::Idempotent,
        args: "{category, key, value, confidence?, source?}",
        summary: "remember a fact about the user (kept when its category is allowed and confidence high enough; otherwise suggested to the user)",
    },
    ToolSpec {
        name: "http.fetch",
        effect: EffectClass::AtMostOnce,
        args: "{method?, url, headers?, body?}",
        summary: "send an HTTP request (https; private addresses are refused or reviewed)",
    },
];

/// A hash of the tool list: a checkpoint made against other tools may not resume silently.
pub fn schema_hash() -> Digest {
    Digest::of(serde_json::to_string(SPECS).unwrap_or_default().as_bytes())
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool {0:?}; the tools are fs.read, fs.list, fs.search, fs.write, fs.edit, fs.delete, fs.move, shell.exec, http.fetch, memory.remember")]
    Unknown(String),
    #[error("{tool}: invalid arguments: {detail}")]
    Args { tool: String, detail: String },
    #[error("{0}")]
    Jail(#[from] JailError),
    /// The action is well-formed but cannot be done as asked (e.g. `old` not found).
    #[error("{tool}: {detail}")]
    Failed { tool: &'static str, detail: String },
}

/// A validated action: paths are jailed, sizes checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Read {
        path: RelPath,
    },
    List {
        path: RelPath,
        recursive: bool,
    },
    Search {
        pattern: String,
        path: RelPath,
    },
    Write {
        path: RelPath,
        content: String,
    },
    Edit {
        path: RelPath,
        old: String,
        new: String,
    },
    Delete {
        path: RelPath,
    },
    Move {
        from: RelPath,
        to: RelPath,
    },
    Shell(ShellCommand),
    Fetch(FetchRequest),
    Remember(Remember),
    /// An external agent's request to run one of its own tools (see [`permission`]).
    Permission(Permission),
    /// A tool of an MCP server the run started (see [`mcp`]).
    Mcp(McpCall),
}

/// `memory.remember`: a fact an agent proposes for the user's profile memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remember {
    pub category: String,
    pub key: String,
    pub value: String,
    /// Thousandths (0–1000), so the action compares exactly.
    pub confidence_milli: Option<u16>,
    /// The words the fact was drawn from.
    pub source: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    /// One of the allowed categories: language, style, expertise, format, workflow, preference.
    category: String,
    /// A short name for the fact, e.g. `preferred_language`.
    key: String,
    /// The fact itself, in a few words.
    value: String,
    /// 0 to 1: how sure you are the user meant this to be remembered.
    #[serde(default)]
    confidence: Option<f64>,
    /// The user's words the fact comes from.
    #[serde(default)]
    source: Option<String>,
}

impl Remember {
    fn parse(value: &Value) -> Result<Self, ToolError> {
        let t = "memory.remember";
        let r: RememberArgs = args(t, value)?;
        for (what, text, max) in [
            ("category", r.category.as_str(), 32),
            ("key", r.key.as_str(), 64),
            ("value", r.value.as_str(), 1000),
        ] {
            if text.trim().is_empty() || text.chars().count() > max {
                return Err(invalid(
                    t,
                    format!("`{what}` must be 1 to {max} characters"),
                ));
            }
        }
        if r.source.as_ref().is_some_and(|s| s.chars().count() > 2000) {
            return Err(invalid(t, "`source` must be at most 2000 characters"));
        }
        let confidence_milli = match r.confidence {
            None => None,
            Some(c) if (0.0..=1.0).contains(&c) => u16::try_from((c * 1000.0).round() as i64).ok(),
            Some(c) => {
                return Err(invalid(
                    t,
                    format!("`confidence` {c} must be between 0 and 1"),
                ))
            }
        };
        Ok(Self {
            category: r.category,
            key: r.key,
            value: r.value,
            confidence_milli,
            source: r.source,
        })
    }

    pub fn confidence(&self) -> Option<f64> {
        self.confidence_milli.map(|m| f64::from(m) / 1000.0)
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PathArgs {
    /// A path relative to the workspace root.
    path: String,
}
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// A directory relative to the workspace root (default: the root).
    #[serde(default)]
    path: Option<String>,
    /// Also list subdirectories' entries.
    #[serde(default)]
    recursive: bool,
}
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// A regular expression (Rust syntax).
    pattern: String,
    /// A file or directory relative to the workspace root (default: the root).
    #[serde(default)]
    path: Option<String>,
}
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// A path relative to the workspace root.
    path: String,
    /// The whole new content of the file.
    content: String,
}
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// A path relative to the workspace root.
    path: String,
    /// The exact text to replace; it must occur exactly once.
    old: String,
    /// The text to put in its place.
    new: String,
}
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct MoveArgs {
    /// The file to move, relative to the workspace root.
    from: String,
    /// Where to move it (must not exist).
    to: String,
}

/// The JSON Schema of each built-in tool's arguments, generated from the very types its calls are
/// parsed into: one source of truth for what a model is told and what the harness accepts.
pub fn arg_schema(tool: &str) -> Option<Value> {
    let schema = match tool {
        "fs.read" | "fs.delete" => schemars::schema_for!(PathArgs),
        "fs.list" => schemars::schema_for!(ListArgs),
        "fs.search" => schemars::schema_for!(SearchArgs),
        "fs.write" => schemars::schema_for!(WriteArgs),
        "fs.edit" => schemars::schema_for!(EditArgs),
        "fs.move" => schemars::schema_for!(MoveArgs),
        "shell.exec" => schemars::schema_for!(shell::Args),
        "http.fetch" => schemars::schema_for!(fetch::Args),
        "memory.remember" => schemars::schema_for!(RememberArgs),
        _ => return None,
    };
    Some(clean_schema(schemars::Schema::to_value(schema)))
}

/// Drops what a function's parameters need not carry (`$schema`, the Rust type's title).
pub(crate) fn clean_schema(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
    }
    v
}

/// A tool's name as a model function (`fs.read` → `fs_read`: function names allow no dots).
pub fn function_name(tool: &str) -> String {
    tool.replace('.', "_")
}

/// The built-in tool a model function names, if any.
pub fn tool_for_function(name: &str) -> Option<&'static str> {
    SPECS
        .iter()
        .map(|s| s.name)
        .find(|t| function_name(t) == name || *t == name)
}

/// Every built-in tool as an OpenAI `tools` entry.
pub fn function_schemas() -> Vec<Value> {
    SPECS
        .iter()
        .filter_map(|spec| {
            let parameters = arg_schema(spec.name)?;
            Some(json!({
                "type": "function",
                "function": {
                    "name": function_name(spec.name),
                    "description": spec.summary,
                    "parameters": parameters,
                },
            }))
        })
        .collect()
}

fn args<T: serde::de::DeserializeOwned>(tool: &str, value: &Value) -> Result<T, ToolError> {
    let value = if value.is_null() {
        json!({})
    } else {
        value.clone()
    };
    serde_json::from_value(value).map_err(|e| ToolError::Args {
        tool: tool.to_owned(),
        detail: e.to_string(),
    })
}

fn limit_content(tool: &str, what: &str, s: &str) -> Result<(), ToolError> {
    if s.len() > WRITE_LIMIT {
        return Err(ToolError::Args {
            tool: tool.to_owned(),
            detail: format!(
                "`{what}` is {} bytes, over the {WRITE_LIMIT}-byte limit",
                s.len()
            ),
        });
    }
    Ok(())
}

impl Action {
    /// Step 1 of the protocol: schema, limits, jail.
    pub fn parse(call: &ToolCall, ws: &Workspace) -> Result<Self, ToolError> {
        let t = call.tool.as_str();
        let a = &call.args;
        Ok(match t {
            "fs.read" => Action::Read {
                path: ws.resolve(&args::<PathArgs>(t, a)?.path)?,
            },
            "fs.list" => {
                let l: ListArgs = args(t, a)?;
                Action::List {
                    path: ws.resolve(l.path.as_deref().unwrap_or("."))?,
                    recursive: l.recursive,
                }
            }
            "fs.search" => {
                let s: SearchArgs = args(t, a)?;
                if s.pattern.is_empty() || s.pattern.len() > 1000 {
                    return Err(ToolError::Args {
                        tool: t.into(),
                        detail: "`pattern` must be 1 to 1000 characters".into(),
                    });
                }
                regex::RegexBuilder::new(&s.pattern)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| ToolError::Args {
                        tool: t.into(),
                        detail: format!("`pattern` is not a valid regular expression: {e}"),
                    })?;
                Action::Search {
                    pattern: s.pattern,
                    path: ws.resolve(s.path.as_deref().unwrap_or("."))?,
                }
            }
            "fs.write" => {
                let w: WriteArgs = args(t, a)?;
                limit_content(t, "content", &w.content)?;
                Action::Write {
                    path: ws.resolve(&w.path)?,
                    content: w.content,
                }
            }
            "fs.edit" => {
                let e: EditArgs = args(t, a)?;
                if e.old.is_empty() {
                    return Err(ToolError::Args {
                        tool: t.into(),
                        detail: "`old` must not be empty".into(),
                    });
                }
                limit_content(t, "old", &e.old)?;
                limit_content(t, "new", &e.new)?;
                Action::Edit {
                    path: ws.resolve(&e.path)?,
                    old: e.old,
                    new: e.new,
                }
            }
            "fs.delete" => Action::Delete {
                path: ws.resolve(&args::<PathArgs>(t, a)?.path)?,
            },
            "fs.move" => {
                let m: MoveArgs = args(t, a)?;
                Action::Move {
                    from: ws.resolve(&m.from)?,
                    to: ws.resolve(&m.to)?,
                }
            }
            "shell.exec" => Action::Shell(ShellCommand::parse(a)?),
            "http.fetch" => Action::Fetch(FetchRequest::parse(a)?),
            "memory.remember" => Action::Remember(Remember::parse(a)?),
            permission::TOOL => Action::Permission(Permission::parse(a, ws)?),
            mcp::TOOL => Action::Mcp(McpCall::parse(a)?),
            other => return Err(ToolError::Unknown(other.to_owned())),
        })
    }

    pub fn tool(&self) -> &'static str {
        match self {
            Action::Read { .. } => "fs.read",
            Action::List { .. } => "fs.list",
            Action::Search { .. } => "fs.search",
            Action::Write { .. } => "fs.write",
            Action::Edit { .. } => "fs.edit",
            Action::Delete { .. } => "fs.delete",
            Action::Move { .. } => "fs.move",
            Action::Shell(_) => "shell.exec",
            Action::Fetch(_) => "http.fetch",
            Action::Remember(_) => "memory.remember",
            Action::Permission(_) => permission::TOOL,
            Action::Mcp(_) => mcp::TOOL,
        }
    }

    pub fn effect_class(&self) -> EffectClass {
        if matches!(self, Action::Permission(_)) {
            // Reins runs nothing for it: the agent does, or asks Reins to in a step of its own.
            return EffectClass::Pure;
        }
        if matches!(self, Action::Mcp(_)) {
            // Whatever the server claims: Reins cannot read back what a call did.
            return EffectClass::AtMostOnce;
        }
        let name = self.tool();
        SPECS
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.effect)
            .unwrap_or(EffectClass::AtMostOnce)
    }

    /// The exact action, normalised: what a review binds to and what the journal records.
    pub fn canonical(&self) -> Value {
        let args = match self {
            Action::Read { path } | Action::Delete { path } => json!({ "path": path }),
            Action::List { path, recursive } => json!({ "path": path, "recursive": recursive }),
            Action::Search { pattern, path } => json!({ "pattern": pattern, "path": path }),
            Action::Write { path, content } => json!({ "path": path, "content": content }),
            Action::Edit { path, old, new } => json!({ "path": path, "old": old, "new": new }),
            Action::Move { from, to } => json!({ "from": from, "to": to }),
            Action::Shell(cmd) => cmd.canonical_args(),
            Action::Fetch(req) => req.canonical_args(),
            Action::Remember(r) => json!({
                "category": r.category, "key": r.key, "value": r.value,
                "confidence": r.confidence(), "source": r.source,
            }),
            Action::Permission(p) => p.canonical_args(),
            Action::Mcp(c) => c.canonical_args(),
        };
        json!({ "tool": self.tool(), "args": args })
    }

    pub fn canonical_text(&self) -> String {
        crate::digest::canonical_json(&self.canonical())
    }

    pub fn hash(&self) -> Digest {
        Digest::of(self.canonical_text().as_bytes())
    }

    /// The paths an effect touches (empty for pure tools).
    pub fn touched(&self) -> Vec<&RelPath> {
        match self {
            Action::Write { path, .. } | Action::Edit { path, .. } | Action::Delete { path } => {
                vec![path]
            }
            Action::Move { from, to } => vec![from, to],
            _ => Vec::new(),
        }
    }

    /// Every workspace path the action names, read or written.
    pub fn paths(&self) -> Vec<&RelPath> {
        match self {
            Action::Read { path } | Action::List { path, .. } | Action::Search { path, .. } => {
                vec![path]
            }
            _ => self.touched(),
        }
    }

    /// The host an `http.fetch` goes to.
    pub fn host(&self) -> Option<&str> {
        match self {
            Action::Fetch(req) => req.url.host_str(),
            _ => None,
        }
    }

    /// Whether the effect is on files Reins can read back (settled from the disk after a crash).
    pub fn is_file_effect(&self) -> bool {
        !self.touched().is_empty()
    }
}

/// Deserialises a tool's arguments, with the tool's name in the error.
pub(crate) fn parse_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    value: &Value,
) -> Result<T, ToolError> {
    args(tool, value)
}

pub(crate) fn invalid(tool: &str, detail: impl Into<String>) -> ToolError {
    ToolError::Args {
        tool: tool.to_owned(),
        detail: detail.into(),
    }
}

/// Headers for `http.fetch`, ordered so the canonical form is stable.
pub type Headers = BTreeMap<String, String>;

/// The canonical form of a call that did not validate, so even a refused proposal is recorded exactly.
pub fn canonical_of_raw(call: &ToolCall) -> String {
    json!({ "tool": call.tool, "args": call.args }).to_string()
}
