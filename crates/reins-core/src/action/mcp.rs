//! `mcp.call`: one call of a tool an MCP server offers. The model names the server, the tool and the
//! arguments; the harness adds what it knows of the tool from the server it started (its identity,
//! its description, its hints), so the action a person reviews — and the approval bound to its hash —
//! names exactly which server, which tool and which arguments. Hints are the server's claims: the
//! policy lets them raise risk, never lower it.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{invalid, ToolError};

pub const TOOL: &str = "mcp.call";

/// The name Reins' own memory server goes by in an external agent's session.
pub const MEMORY_SERVER_NAME: &str = "reins-memory";

/// Largest arguments object accepted, as JSON.
pub const MAX_ARGS_BYTES: usize = 1024 * 1024;

/// What an MCP server says about one of its tools (MCP `ToolAnnotations`): claims, never checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Hints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl Hints {
    /// "read-only, closed world" for people; "none" when the server claims nothing.
    pub fn describe(&self) -> String {
        let mut out = Vec::new();
        let mut say = |v: Option<bool>, yes: &str, no: &str| {
            if let Some(b) = v {
                out.push(if b { yes.to_owned() } else { no.to_owned() });
            }
        };
        say(self.read_only, "read-only", "not read-only");
        say(self.destructive, "destructive", "not destructive");
        say(self.idempotent, "idempotent", "not idempotent");
        say(self.open_world, "open world", "closed world");
        if out.is_empty() {
            "none".into()
        } else {
            out.join(", ")
        }
    }
}

/// A validated MCP tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpCall {
    /// The server's name as the user registered it.
    pub server: String,
    /// A digest of how the server was started and how it named itself: an approval for one
    /// server's tool never covers another's of the same name.
    pub identity: String,
    pub tool: String,
    /// The arguments, exactly as they are sent (a JSON object).
    pub arguments: Value,
    /// The server's description of the tool (its claim).
    pub description: String,
    pub hints: Hints,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    server: String,
    tool: String,
    #[serde(default)]
    arguments: Value,
    /// Added by the harness from the server it started; a call without it names no tool the run
    /// offers.
    identity: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    hints: Hints,
}

impl McpCall {
    pub fn parse(value: &Value) -> Result<Self, ToolError> {
        let a: Args = super::parse_args(TOOL, value)?;
        for (what, text) in [("server", &a.server), ("tool", &a.tool)] {
            if text.is_empty() || text.chars().count() > 128 {
                return Err(invalid(TOOL, format!("`{what}` must be 1 to 128 characters")));
            }
        }
        let Some(identity) = a.identity else {
            return Err(invalid(
                TOOL,
                format!(
                    "this run offers no tool `{}` of an MCP server `{}`",
                    a.tool, a.server
                ),
            ));
        };
        let arguments = match a.arguments {
            Value::Null => Value::Object(Map::new()),
            Value::Object(o) => Value::Object(o),
            other => {
                return Err(invalid(
                    TOOL,
                    format!("`arguments` must be an object, not {other}"),
                ))
            }
        };
        let size = arguments.to_string().len();
        if size > MAX_ARGS_BYTES {
            return Err(invalid(
                TOOL,
                format!("the arguments are {size} bytes, over the {MAX_ARGS_BYTES}-byte limit"),
            ));
        }
        Ok(Self {
            server: a.server,
            identity,
            tool: a.tool,
            arguments,
            description: a.description,
            hints: a.hints,
        })
    }

    pub fn canonical_args(&self) -> Value {
        json!({
            "server": self.server,
            "identity": self.identity,
            "tool": self.tool,
            "arguments": self.arguments,
            "description": self.description,
            "hints": self.hints,
        })
    }

    /// "calls `write_file` of the MCP server `fs`".
    pub fn describe(&self) -> String {
        format!("calls `{}` of the MCP server `{}`", self.tool, self.server)
    }

    /// Every string in the arguments, with where it sits (`path`, `paths[1]`, `edits[0].newText`).
    pub fn strings(&self) -> Vec<(String, &str)> {
        let mut out = Vec::new();
        collect(&self.arguments, String::new(), &mut out);
        out
    }
}

fn collect<'a>(v: &'a Value, at: String, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::String(s) => out.push((at, s)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect(item, format!("{at}[{i}]"), out);
            }
        }
        Value::Object(o) => {
            for (k, item) in o {
                let key = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                collect(item, key, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(v: Value) -> Result<McpCall, ToolError> {
        McpCall::parse(&v)
    }

    #[test]
    fn a_call_the_harness_did_not_complete_names_no_tool() {
        let err = call(json!({"server": "fs", "tool": "write_file", "arguments": {}}))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("offers no tool `write_file`"), "{err}");
    }

    #[test]
    fn arguments_must_be_an_object_and_strings_are_found_everywhere() -> Result<(), ToolError> {
        let bad = call(json!({"server": "fs", "tool": "t", "identity": "x", "arguments": [1]}));
        assert!(bad.is_err());
        let c = call(json!({"server": "fs", "tool": "t", "identity": "x",
            "arguments": {"path": "a.txt", "edits": [{"newText": "n"}], "n": 3}}))?;
        let found: Vec<(String, &str)> = c.strings();
        assert!(found.contains(&("path".into(), "a.txt")));
        assert!(found.contains(&("edits[0].newText".into(), "n")));
        Ok(())
    }

    #[test]
    fn the_hash_binds_server_identity_tool_and_arguments() -> Result<(), ToolError> {
        let base = json!({"server": "fs", "tool": "write_file", "identity": "id1",
            "arguments": {"path": "a", "content": "x"}});
        let a = super::super::Action::Mcp(call(base.clone())?);
        for (k, v) in [
            ("identity", json!("id2")),
            ("tool", json!("edit_file")),
            ("arguments", json!({"path": "a", "content": "y"})),
        ] {
            let mut other = base.clone();
            other[k] = v;
            let b = super::super::Action::Mcp(call(other)?);
            assert_ne!(a.hash(), b.hash(), "{k}");
        }
        Ok(())
    }

    #[test]
    fn hints_read_as_claims() {
        let h = Hints {
            read_only: Some(false),
            destructive: Some(true),
            ..Hints::default()
        };
        assert_eq!(h.describe(), "not read-only, destructive");
        assert_eq!(Hints::default().describe(), "none");
    }
}
