//! What the webview may send, checked before the core sees it. The webview is treated as possibly
//! compromised: unknown fields are refused, sizes are capped, ids must look like ids.

use reins_core::api::RunId;
use reins_core::api::Scope;
use serde::Deserialize;

use crate::error::{IpcError, Result};

/// Edited content, a goal, a reason: generous for a file, tiny for a database.
pub const MAX_TEXT: usize = 4 * 1024 * 1024;
pub const MAX_LINE: usize = 4096;

pub fn run_id(text: &str) -> Result<RunId> {
    text.parse()
        .map_err(|_| IpcError::invalid(format!("{text:?} is not a run id")))
}

/// Approval and fact ids are UUIDs (or unique hex prefixes of them, as the CLI accepts).
pub fn id(what: &str, text: &str) -> Result<String> {
    let ok =
        (4..=36).contains(&text.len()) && text.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if ok {
        Ok(text.to_owned())
    } else {
        Err(IpcError::invalid(format!("{text:?} is not a {what} id")))
    }
}

pub fn line(what: &str, text: &str) -> Result<String> {
    if text.len() > MAX_LINE {
        return Err(IpcError::invalid(format!(
            "the {what} is too long ({} bytes, at most {MAX_LINE})",
            text.len()
        )));
    }
    if text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(IpcError::invalid(format!(
            "the {what} contains control characters"
        )));
    }
    Ok(text.to_owned())
}

pub fn path(what: &str, text: &str) -> Result<std::path::PathBuf> {
    let text = line(what, text.trim())?;
    if text.is_empty() {
        return Err(IpcError::invalid(format!("choose a {what}")));
    }
    let p = std::path::PathBuf::from(&text);
    if !p.is_absolute() {
        return Err(IpcError::invalid(format!(
            "the {what} must be an absolute path, not {text:?}"
        )));
    }
    Ok(p)
}

#[derive(Debug, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Approve {
    pub scope: Scope,
    /// A grant pattern (a command prefix or a path glob); exact action when absent.
    pub pattern: Option<String>,
    /// The action's arguments as the person edited them; this is what runs.
    pub edited_args: Option<serde_json::Value>,
    pub note: Option<String>,
    /// The action hash the card showed: refused if the approval now holds another.
    pub expect_hash: String,
}

impl Approve {
    pub fn check(&self) -> Result<()> {
        if let Some(p) = &self.pattern {
            line("pattern", p)?;
        }
        if let Some(n) = &self.note {
            line("note", n)?;
        }
        if let Some(a) = &self.edited_args {
            if !a.is_object() {
                return Err(IpcError::invalid("edited arguments must be an object"));
            }
            if a.to_string().len() > MAX_TEXT {
                return Err(IpcError::invalid("the edited action is too large"));
            }
        }
        let h = &self.expect_hash;
        if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(IpcError::invalid(
                "expectHash must be the 64-hex action hash the card showed",
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartLlm {
    pub goal: String,
    pub workspace: String,
    /// None: the provider defaults from Settings.
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    /// Registered MCP servers whose tools the model is offered, by name.
    pub mcp: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartAcp {
    pub goal: String,
    pub workspace: String,
    /// A registered agent's name, or a command line (never run through a shell).
    pub agent: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_lines_are_checked() {
        assert!(id("approval", "0193a1b2").is_ok());
        assert!(id("approval", "../../etc").is_err(), "paths are not ids");
        assert!(id("approval", "abc").is_err(), "too short to be unique");
        assert!(line("reason", &"x".repeat(MAX_LINE + 1)).is_err());
        assert!(
            line("reason", "ok\u{1b}[31m").is_err(),
            "no terminal escapes"
        );
        assert!(path("workspace", "relative/dir").is_err());
        assert!(path("workspace", "/tmp").is_ok());
    }

    #[test]
    fn unknown_fields_are_refused() {
        let bad =
            serde_json::json!({"scope": "once", "expectHash": "ab".repeat(32), "sql": "DROP"});
        assert!(serde_json::from_value::<Approve>(bad).is_err());
    }
}
