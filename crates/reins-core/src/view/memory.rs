//! Profile memory as the faces show it: facts, their history, and suggestions waiting for the user.

use serde::Serialize;

use crate::memory::{FactDetail, Remembered};
use crate::store::memory::{FactRow, SuggestionRow, VersionRow};

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FactView {
    pub id: String,
    pub category: String,
    pub key: String,
    /// The current version.
    pub version: i64,
    pub value: String,
    pub confidence: f64,
    /// `user` or `agent`.
    pub origin: String,
    pub run_id: Option<String>,
    pub step_seq: Option<i64>,
    /// The words it was drawn from.
    pub source_text: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<FactRow> for FactView {
    fn from(row: FactRow) -> Self {
        let FactRow {
            id,
            category,
            key,
            version,
            value,
            confidence,
            origin,
            run_id,
            step_seq,
            source_text,
            created_at,
            updated_at,
        } = row;
        Self {
            id,
            category,
            key,
            version,
            value,
            confidence,
            origin,
            run_id,
            step_seq,
            source_text,
            created_at,
            updated_at,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct VersionView {
    pub version: i64,
    pub value: String,
    pub confidence: f64,
    pub origin: String,
    pub run_id: Option<String>,
    pub step_seq: Option<i64>,
    pub source_text: Option<String>,
    pub created_at: i64,
}

impl From<VersionRow> for VersionView {
    fn from(row: VersionRow) -> Self {
        let VersionRow {
            version,
            value,
            confidence,
            origin,
            run_id,
            step_seq,
            source_text,
            created_at,
        } = row;
        Self {
            version,
            value,
            confidence,
            origin,
            run_id,
            step_seq,
            source_text,
            created_at,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SuggestionView {
    pub id: String,
    pub category: String,
    pub key: String,
    pub value: String,
    pub confidence: f64,
    pub run_id: Option<String>,
    pub step_seq: Option<i64>,
    pub source_text: Option<String>,
    /// Why it was not stored directly.
    pub reason: String,
    pub created_at: i64,
}

impl From<SuggestionRow> for SuggestionView {
    fn from(row: SuggestionRow) -> Self {
        let SuggestionRow {
            id,
            category,
            key,
            value,
            confidence,
            run_id,
            step_seq,
            source_text,
            reason,
            created_at,
        } = row;
        Self {
            id,
            category,
            key,
            value,
            confidence,
            run_id,
            step_seq,
            source_text,
            reason,
            created_at,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FactDetailView {
    pub fact: FactView,
    /// Newest first.
    pub history: Vec<VersionView>,
}

impl From<FactDetail> for FactDetailView {
    fn from(d: FactDetail) -> Self {
        let FactDetail { fact, history } = d;
        Self {
            fact: fact.into(),
            history: history.into_iter().map(Into::into).collect(),
        }
    }
}

/// What asking Reins to remember something did.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum RememberedView {
    /// Stored as a new fact, or a new version of one.
    Stored { fact: FactView },
    /// The same value was already the current version: nothing changed.
    Unchanged { fact: FactView },
    /// Waiting for the user.
    Suggested { suggestion: SuggestionView },
}

impl From<Remembered> for RememberedView {
    fn from(r: Remembered) -> Self {
        match r {
            Remembered::Stored { fact } => Self::Stored { fact: fact.into() },
            Remembered::Unchanged { fact } => Self::Unchanged { fact: fact.into() },
            Remembered::Suggested { suggestion } => Self::Suggested {
                suggestion: suggestion.into(),
            },
        }
    }
}
