//! The tools a run's MCP servers offer, as the model is shown them: each under a function name an
//! OpenAI-compatible API accepts (`^[A-Za-z0-9_-]{1,64}$`), unique in the run and never one of the
//! built-in tools' names. The catalog's digest goes into the run's compatibility record, so a server
//! whose tools changed is caught on resume.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::digest::Digest;
use crate::action::mcp::Hints;

/// Longest description kept of a tool (the model and the card see it).
const MAX_DESCRIPTION: usize = 4000;

/// One tool of one server, as offered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OfferedTool {
    pub server: String,
    /// The server's identity (see [`crate::action::McpCall::identity`]).
    pub identity: String,
    pub tool: String,
    /// The model function it is offered as.
    pub function: String,
    pub description: String,
    /// The JSON Schema of its arguments, as the server gave it.
    pub input_schema: Value,
    pub hints: Hints,
}

/// Every tool of a run's servers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    pub tools: Vec<OfferedTool>,
}

/// A server's tool as it listed it, before it is named for the model.
pub struct Listed {
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
    pub hints: Hints,
}

impl Catalog {
    /// Adds one server's tools, naming each for the model.
    pub fn add(&mut self, server: &str, identity: &str, listed: Vec<Listed>) {
        let mut taken: BTreeSet<String> = self.tools.iter().map(|t| t.function.clone()).collect();
        for l in listed {
            let function = function_name(server, &l.tool, &taken);
            taken.insert(function.clone());
            let description: String = l.description.chars().take(MAX_DESCRIPTION).collect();
            self.tools.push(OfferedTool {
                server: server.to_owned(),
                identity: identity.to_owned(),
                tool: l.tool,
                function,
                description,
                input_schema: l.input_schema,
                hints: l.hints,
            });
        }
    }

    /// The tool a model function names.
    pub fn by_function(&self, function: &str) -> Option<&OfferedTool> {
        self.tools.iter().find(|t| t.function == function)
    }

    pub fn find(&self, server: &str, tool: &str) -> Option<&OfferedTool> {
        self.tools
            .iter()
            .find(|t| t.server == server && t.tool == tool)
    }

    /// Every tool as an OpenAI `tools` entry.
    pub fn function_schemas(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(|t| {
                let mut parameters = t.input_schema.clone();
                if !parameters.is_object() {
                    parameters = json!({"type": "object"});
                }
                json!({
                    "type": "function",
                    "function": {
                        "name": t.function,
                        "description": format!("[MCP server `{}`] {}", t.server, t.description),
                        "parameters": parameters,
                    },
                })
            })
            .collect()
    }

    /// The digest of everything about the tools a model or a person relies on, per server:
    /// (server, digest) pairs in name order.
    pub fn digests(&self) -> Vec<(String, String)> {
        let servers: BTreeSet<&str> = self.tools.iter().map(|t| t.server.as_str()).collect();
        servers
            .into_iter()
            .map(|s| {
                let tools: Vec<Value> = self
                    .tools
                    .iter()
                    .filter(|t| t.server == s)
                    .map(|t| {
                        json!({
                            "tool": t.tool, "description": t.description,
                            "inputSchema": t.input_schema, "hints": t.hints,
                        })
                    })
                    .collect();
                let text = crate::digest::canonical_json(&json!(tools));
                (s.to_owned(), Digest::of(text.as_bytes()).to_string())
            })
            .collect()
    }
}

/// `server__tool`, with every character a function name may not hold as `_`; cut, with a digest
/// to keep it unique, when it is too long or taken (by another tool or a built-in).
fn function_name(server: &str, tool: &str, taken: &BTreeSet<String>) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let name = format!("{}__{}", clean(server), clean(tool));
    let builtin = crate::action::tool_for_function(&name).is_some()
        || name == crate::action::ASK_USER;
    if name.len() <= 64 && !taken.contains(&name) && !builtin {
        return name;
    }
    let digest = Digest::of(format!("{server}\u{0}{tool}").as_bytes());
    let tag = digest.short();
    let head: String = name.chars().take(64 - tag.len() - 1).collect();
    let mut candidate = format!("{head}_{tag}");
    let mut n = 1;
    while taken.contains(&candidate) {
        candidate = format!("{}_{n}", &candidate[..candidate.len().min(60)]);
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(tool: &str) -> Listed {
        Listed {
            tool: tool.into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
            hints: Hints::default(),
        }
    }

    #[test]
    fn function_names_obey_the_api_rules_and_are_unique() {
        let mut c = Catalog::default();
        let long = "t".repeat(100);
        c.add(
            "fs",
            "id",
            vec![
                listed("read.file"),
                listed("read_file"),
                listed(&long),
                listed("ünï code"),
            ],
        );
        let re = regex::Regex::new("^[A-Za-z0-9_-]{1,64}$").ok();
        let mut seen = BTreeSet::new();
        for t in &c.tools {
            assert!(
                re.as_ref().is_some_and(|r| r.is_match(&t.function)),
                "{}",
                t.function
            );
            assert!(seen.insert(t.function.clone()), "{} twice", t.function);
        }
        assert_eq!(c.tools[0].function, "fs__read_file");
        assert_ne!(c.tools[1].function, "fs__read_file");
        let found = c.by_function(&c.tools[0].function.clone());
        assert_eq!(found.map(|t| t.tool.as_str()), Some("read.file"));
    }

    #[test]
    fn a_changed_tool_changes_its_servers_digest_only() {
        let mut a = Catalog::default();
        a.add("fs", "id", vec![listed("read")]);
        a.add("git", "id2", vec![listed("log")]);
        let mut b = Catalog::default();
        let mut changed = listed("read");
        changed.input_schema = json!({"type": "object", "properties": {"x": {}}});
        b.add("fs", "id", vec![changed]);
        b.add("git", "id2", vec![listed("log")]);
        let (da, db) = (a.digests(), b.digests());
        assert_ne!(da[0], db[0]);
        assert_eq!(da[1], db[1]);
    }
}
