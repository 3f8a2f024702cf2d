//! Review checkpoints: what a person is shown (the exact preview and a context summary), what scope
//! their approval may have, and the grants it can leave behind. The engine writes and honours them;
//! this module holds the vocabulary and the pure decisions.

use serde::{Deserialize, Serialize};

pub mod context;
pub mod grant;
pub mod preview;
pub mod watch;

pub use context::ContextSummary;
pub use grant::{GrantSpec, Matcher};

/// How far an approval reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum Scope {
    /// Only this action, this once.
    Once,
    /// This action (or pattern) for the rest of this run.
    Run,
    /// In any run on this workspace.
    Workspace,
    /// Everywhere, until revoked.
    Always,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Once => "once",
            Scope::Run => "run",
            Scope::Workspace => "workspace",
            Scope::Always => "always",
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub use crate::policy::OnTimeout;

/// Where a review checkpoint stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "ApprovalStatus")]
pub enum Status {
    Pending,
    Approved,
    Rejected,
    Expired,
    Superseded,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Rejected => "rejected",
            Status::Expired => "expired",
            Status::Superseded => "superseded",
        }
    }

    pub const ALL: [Status; 5] = [
        Status::Pending,
        Status::Approved,
        Status::Rejected,
        Status::Expired,
        Status::Superseded,
    ];

    pub fn parse(text: &str) -> Option<Status> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
