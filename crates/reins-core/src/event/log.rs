//! The log's own vocabulary: which events a person asks for ([`Filter`]), where the chain stands
//! ([`Mark`]), and how it is written out ([`ExportFormat`]).

use serde::{Deserialize, Serialize};

use crate::ids::RunId;

/// A mark is kept at seq 1 and at every multiple of this, to say roughly where a replaced chain
/// starts to differ.
pub const MARK_EVERY: i64 = 16_384;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Mark {
    pub seq: i64,
    pub hash: String,
}

impl Mark {
    /// Whether the event at `seq` is kept as a mark (the head is kept whatever its seq).
    pub fn wanted(seq: i64) -> bool {
        seq == 1 || seq % MARK_EVERY == 0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum ExportFormat {
    Jsonl,
    Csv,
}

impl ExportFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Jsonl => "jsonl",
            ExportFormat::Csv => "csv",
        }
    }
}

/// Which events: all given conditions must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Filter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunId>,
    /// An exact kind (`approval.approved`) or a family (`approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Unix ms, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    /// Unix ms, exclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self == &Filter::default()
    }

    /// Checks what a person typed; the message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(kind) = &self.kind {
            let ok = !kind.is_empty()
                && kind.len() <= 64
                && kind
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'_');
            if !ok {
                return Err(format!(
                    "--kind {kind:?}: a kind is lowercase words with dots, like `approval.approved` or `approval`"
                ));
            }
        }
        if let Some(actor) = &self.actor {
            if !["user", "agent", "harness", "system"].contains(&actor.as_str()) {
                return Err(format!(
                    "--actor {actor:?}: one of user, agent, harness, system"
                ));
            }
        }
        if let (Some(since), Some(until)) = (self.since, self.until) {
            if since >= until {
                return Err("--since must be before --until".into());
            }
        }
        Ok(())
    }
}
