//! What a face's client may send — the app's webview, a browser over `reins serve` — checked
//! before the harness sees it. Both faces use these same checks. The client is treated as possibly
//! compromised: unknown fields are refused, sizes are capped, ids must look like ids.

use serde::Deserialize;

use crate::approval::{Scope, Status as ApprovalStatus};
use crate::engine::{ApproveRequest, EditedAction};
use crate::error::{Error, Result};
use crate::ids::RunId;

fn invalid(message: impl Into<String>) -> Error {
    Error::Invalid(message.into())
}

/// Edited content, a goal, a reason: generous for a file, tiny for a database.
pub const MAX_TEXT: usize = 4 * 1024 * 1024;
pub const MAX_LINE: usize = 4096;

pub fn run_id(text: &str) -> Result<RunId> {
    text.parse()
        .map_err(|_| invalid(format!("{text:?} is not a run id")))
}

/// Approval and fact ids are UUIDs (or unique hex prefixes of them, as the CLI accepts).
pub fn id(what: &str, text: &str) -> Result<String> {
    let ok =
        (4..=36).contains(&text.len()) && text.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if ok {
        Ok(text.to_owned())
    } else {
        Err(invalid(format!("{text:?} is not a {what} id")))
    }
}

pub fn line(what: &str, text: &str) -> Result<String> {
    if text.len() > MAX_LINE {
        return Err(invalid(format!(
            "the {what} is too long ({} bytes, at most {MAX_LINE})",
            text.len()
        )));
    }
    if text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(invalid(format!("the {what} contains control characters")));
    }
    Ok(text.to_owned())
}

pub fn path(what: &str, text: &str) -> Result<std::path::PathBuf> {
    let text = line(what, text.trim())?;
    if text.is_empty() {
        return Err(invalid(format!("choose a {what}")));
    }
    let p = std::path::PathBuf::from(&text);
    if !p.is_absolute() {
        return Err(invalid(format!(
            "the {what} must be an absolute path, not {text:?}"
        )));
    }
    Ok(p)
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
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
    /// A staged command's files (or folders) to leave out of what lands.
    #[serde(default)]
    pub leave_out: Option<Vec<String>>,
}

impl Approve {
    pub fn check(&self) -> Result<()> {
        if let Some(p) = &self.pattern {
            line("pattern", p)?;
        }
        if let Some(n) = &self.note {
            line("note", n)?;
        }
        for p in self.leave_out.iter().flatten() {
            line("path to leave out", p)?;
        }
        if let Some(a) = &self.edited_args {
            if !a.is_object() {
                return Err(invalid("edited arguments must be an object"));
            }
            if a.to_string().len() > MAX_TEXT {
                return Err(invalid("the edited action is too large"));
            }
        }
        let h = &self.expect_hash;
        if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid(
                "expectHash must be the 64-hex action hash the card showed",
            ));
        }
        Ok(())
    }

    /// The checked request, decided `by` (who, as the audit log records it).
    pub fn request(self, by: String) -> Result<ApproveRequest> {
        self.check()?;
        Ok(ApproveRequest {
            scope: self.scope,
            pattern: self.pattern.filter(|p| !p.trim().is_empty()),
            edited: self
                .edited_args
                .map(|args| EditedAction { tool: None, args }),
            note: self.note.filter(|n| !n.trim().is_empty()),
            expect_hash: Some(self.expect_hash),
            by,
            leave_out: self.leave_out.unwrap_or_default(),
        })
    }
}

/// One card of a batch, as the inbox showed it.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BatchCard {
    pub id: String,
    /// The action hash the card showed.
    pub action_hash: String,
}

/// Several cards approved at once, once each: exactly these, each bound to the hash it showed,
/// or none.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApproveBatch {
    pub cards: Vec<BatchCard>,
    pub note: Option<String>,
}

impl ApproveBatch {
    /// The checked cards (ids well-formed, hashes the 64-hex ones shown) and note.
    pub fn checked(self) -> Result<(Vec<crate::engine::Shown>, Option<String>)> {
        if self.cards.len() > crate::engine::MAX_BATCH {
            return Err(invalid(format!(
                "approve at most {} cards at once",
                crate::engine::MAX_BATCH
            )));
        }
        let mut cards = Vec::with_capacity(self.cards.len());
        for c in self.cards {
            let id = id("approval", &c.id)?;
            let h = &c.action_hash;
            if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(
                    "each card's actionHash must be the 64-hex action hash it showed",
                ));
            }
            cards.push(crate::engine::Shown {
                id,
                action_hash: c.action_hash,
            });
        }
        let note = match self.note {
            Some(n) => Some(line("note", &n)?).filter(|n| !n.trim().is_empty()),
            None => None,
        };
        Ok((cards, note))
    }
}

/// A rejection's reason: required, since the agent reads it and tries another way.
pub fn reason(text: &str) -> Result<String> {
    let reason = line("reason", text.trim())?;
    if reason.is_empty() {
        return Err(invalid(
            "say why: the agent reads the reason and tries another way",
        ));
    }
    Ok(reason)
}

/// An approval status filter; None is `pending`.
pub fn approval_status(status: Option<&str>) -> Result<ApprovalStatus> {
    let status = status.unwrap_or("pending");
    ApprovalStatus::parse(status)
        .ok_or_else(|| invalid(format!("no approval status {status:?}")))
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartLlm {
    pub goal: String,
    pub workspace: String,
    /// None: the provider defaults from Settings.
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    /// Registered MCP servers whose tools the model is offered, by name.
    pub mcp: Option<Vec<String>>,
    /// What it may spend (what is left out: the default budget).
    pub budget: Option<crate::budget::Budget>,
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartAcp {
    pub goal: String,
    pub workspace: String,
    /// A registered agent's name, or a command line (never run through a shell).
    pub agent: String,
    /// What it may spend (what is left out: the default budget).
    pub budget: Option<crate::budget::Budget>,
}

/// Who decides from this process, as the audit log records it: `user:NAME@HOST`, then the face in
/// parentheses when there is one (`desktop`). The host tells a team which machine a decision came
/// from (`REINS_HOST` overrides the system's name).
pub fn person(face: Option<&str>) -> String {
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty() && u.len() < 64 && !u.contains(char::is_whitespace));
    let host = crate::worker::host_name();
    let who = match user {
        Some(u) => format!("user:{u}@{host}"),
        None => format!("user@{host}"),
    };
    match face {
        Some(face) => format!("{who} ({face})"),
        None => who,
    }
}

/// Who decides on this desktop's notifications, as the audit log records it.
pub fn notification_person() -> String {
    person(Some(crate::event::NOTIFICATION_FACE))
}

/// Who decided from a paired device: its name, the machine its server runs on, and the face.
pub fn device_person(name: &str) -> String {
    format!("device:{name}@{} (web)", crate::worker::host_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_names_the_person_the_machine_and_the_face() {
        let host = crate::worker::host_name();
        let desktop = person(Some("desktop"));
        assert!(
            desktop.ends_with(&format!("@{host} (desktop)")),
            "{desktop}"
        );
        assert!(desktop.starts_with("user"), "{desktop}");
        assert_eq!(
            device_person("my phone"),
            format!("device:my phone@{host} (web)")
        );
    }

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
