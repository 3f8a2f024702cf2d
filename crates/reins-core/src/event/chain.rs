//! The audit log's own events: its anchor made or accepted, the log verified or exported, and
//! events no key vouched for accepted by a person.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnchorCreated {
    pub reason: String,
    pub adopted: crate::event::Mark,
    pub path: std::path::PathBuf,
}

/// A person accepts that the anchor was made again at `created_at_seq`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnchorAcknowledged {
    pub created_at_seq: i64,
    pub by: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditVerified {
    pub events: i64,
    pub head: Option<crate::event::Mark>,
    /// The anchor's status (`agrees`, `behind`, …).
    pub anchor: String,
    pub elapsed_ms: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditExported {
    pub format: crate::event::ExportFormat,
    pub path: String,
    pub count: u64,
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
    pub head: Option<crate::event::Mark>,
    pub sha256: String,
    pub filter: crate::event::Filter,
    pub redacted_on_export: u64,
}

/// A person accepts the events before this one that no key of this machine vouched for (written
/// where no keyring could be reached, or under another machine's key): verification stops
/// failing on them. This event itself must carry this machine's MAC to count.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnvouchedAccepted {
    /// The first event accepted, and how many.
    pub first_seq: i64,
    pub events: i64,
    pub by: String,
}
