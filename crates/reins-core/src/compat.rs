//! Whether a run can be resumed by this build: the agent, its input, the tool schemas and the
//! checkpoint schema must be the ones the run was started with. A mismatch is not guessed past: the
//! run is suspended with the reason, and a person resumes anyway (`--force`) or starts over.

use serde::{Deserialize, Serialize};

use crate::digest::Digest;

/// What a run was created with, as stored in `runs.compat`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Compat {
    pub agent_kind: String,
    pub agent_version: String,
    /// SHA-256 of the agent's stored input (the plan or the prompt).
    pub spec_hash: String,
    pub tool_schema_hash: String,
    pub checkpoint_schema: i64,
    /// Model, base URL and sampling settings of an LLM agent; absent for script agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_config_hash: Option<String>,
    /// The external agent an ACP run talks to, as it named itself at its latest start. A record,
    /// not compared: the agent may be upgraded under a run, which is told what happened meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_agent: Option<ExternalAgent>,
    /// The tools of the run's MCP servers as first offered: server → digest of its tools. Set when
    /// the servers first start; compared by every later attempt (a change suspends the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tools: Option<std::collections::BTreeMap<String, String>>,
    /// How the checks after each turn of a watched agent find changes: by watching the workspace,
    /// or by a full rescan and why. A record, not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes_found_by: Option<String>,
}

/// An external agent, as it described itself at `initialize`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ExternalAgent {
    pub name: String,
    pub version: String,
    /// What it can do, as dotted names (`loadSession`, `promptCapabilities.image`, …).
    pub capabilities: Vec<String>,
    /// The mode (or session config) Reins chose, in which it asks before acting.
    pub mode: Option<String>,
    /// How the agent itself runs: "confined (Landlock ABI 7, seccomp, network namespace): network
    /// to 127.0.0.1:38211, api.anthropic.com:443 only, writes only its own state".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
    /// The hash of the profile it was started under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_sha256: Option<String>,
}

impl ExternalAgent {
    /// "OpenCode 1.18.33", for cards and lists.
    pub fn label(&self) -> String {
        if self.version.is_empty() {
            self.name.clone()
        } else {
            format!("{} {}", self.name, self.version)
        }
    }
}

/// One field that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mismatch {
    pub field: String,
    pub stored: String,
    pub current: String,
}

impl Compat {
    /// This build's values for an agent of `kind`/`version` started from `spec`.
    pub fn current(kind: &str, version: &str, spec: &str) -> Self {
        Self {
            agent_kind: kind.to_owned(),
            agent_version: version.to_owned(),
            spec_hash: Digest::of(spec.as_bytes()).to_string(),
            tool_schema_hash: crate::action::schema_hash().to_string(),
            checkpoint_schema: crate::checkpoint::SCHEMA_VERSION,
            model_config_hash: None,
            external_agent: None,
            mcp_tools: None,
            changes_found_by: None,
        }
    }

    /// The fields where `self` (stored) and `current` differ.
    pub fn mismatches(&self, current: &Compat) -> Vec<Mismatch> {
        let pairs: [(&'static str, String, String); 6] = [
            (
                "agentKind",
                self.agent_kind.clone(),
                current.agent_kind.clone(),
            ),
            (
                "agentVersion",
                self.agent_version.clone(),
                current.agent_version.clone(),
            ),
            (
                "specHash",
                self.spec_hash.clone(),
                current.spec_hash.clone(),
            ),
            (
                "toolSchemaHash",
                self.tool_schema_hash.clone(),
                current.tool_schema_hash.clone(),
            ),
            (
                "checkpointSchema",
                self.checkpoint_schema.to_string(),
                // This build reads every older schema: only a newer one is a mismatch.
                if self.checkpoint_schema <= current.checkpoint_schema {
                    self.checkpoint_schema.to_string()
                } else {
                    current.checkpoint_schema.to_string()
                },
            ),
            (
                "modelConfigHash",
                self.model_config_hash.clone().unwrap_or_default(),
                current.model_config_hash.clone().unwrap_or_default(),
            ),
        ];
        pairs
            .into_iter()
            .filter(|(_, a, b)| a != b)
            .map(|(field, stored, current)| Mismatch {
                field: field.into(),
                stored,
                current,
            })
            .collect()
    }
}

/// "the tool schemas changed (stored 1a2b3c…, this build 4d5e6f…)" for people.
pub fn describe(mismatches: &[Mismatch]) -> String {
    let short = |s: &str| s.chars().take(12).collect::<String>();
    mismatches
        .iter()
        .map(|m| {
            let what = match m.field.as_str() {
                "agentKind" => "the agent kind",
                "agentVersion" => "the agent version",
                "specHash" => "the run's input (plan or prompt)",
                "toolSchemaHash" => "the tool schemas",
                "checkpointSchema" => "the checkpoint schema",
                "modelConfigHash" => "the model configuration",
                other => other,
            };
            format!(
                "{what} changed (run has {}, this build {})",
                short(&m.stored),
                short(&m.current)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_build_same_input_is_compatible() {
        let a = Compat::current("script", "1", "{\"steps\":[]}");
        assert!(a.mismatches(&a.clone()).is_empty());
    }

    #[test]
    fn a_changed_tool_schema_and_input_are_both_named() {
        let current = Compat::current("script", "1", "{}");
        let stored = Compat {
            tool_schema_hash: "0".repeat(64),
            spec_hash: "f".repeat(64),
            ..current.clone()
        };
        let found: Vec<_> = stored
            .mismatches(&current)
            .into_iter()
            .map(|m| m.field)
            .collect();
        assert_eq!(found, ["specHash", "toolSchemaHash"]);
        let text = describe(&stored.mismatches(&current));
        assert!(text.contains("the tool schemas changed"), "{text}");
    }

    #[test]
    fn older_rows_with_extra_fields_still_parse() -> serde_json::Result<()> {
        let current = Compat::current("script", "1", "{}");
        let mut v = serde_json::to_value(&current)?;
        v["policyVersion"] = "x".into();
        let stored: Compat = serde_json::from_value(v)?;
        assert!(stored.mismatches(&current).is_empty());
        Ok(())
    }
}
