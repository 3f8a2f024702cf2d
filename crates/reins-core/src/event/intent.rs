//! The effect journal's events: an intent written before the effect, how the effect's process ran
//! confined, and how the intent settled (confirmed, recovered, failed, unknown, resolved).

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::journal::{EffectClass, FileImage, IntentStatus};
use crate::policy::Verdict;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentPending {
    pub intent: String,
    pub step: i64,
    pub tool: String,
    pub action_hash: String,
    pub effect_class: EffectClass,
    pub pre: Vec<FileImage>,
    pub post: Vec<FileImage>,
    pub preview_sha256: Option<Digest>,
    pub approval: Option<String>,
    pub verdict: Option<Verdict>,
    /// The hash of the profile the effect's process runs under, when it runs one (a command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_sha256: Option<Digest>,
}

/// How a step's process ran under its profile: what the kernel enforced, and what it stopped.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contained {
    pub step: i64,
    pub program: String,
    pub profile_sha256: Digest,
    /// In words: "confined (Landlock ABI 7, seccomp, mount layer): no network, writes inside the
    /// workspace", or why it ran unconfined.
    pub enforced: String,
    /// What the profile stopped, in words.
    pub blocked: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentConfirmed {
    pub intent: String,
    pub step: i64,
    pub post: Vec<FileImage>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentRecovered {
    pub intent: String,
    pub step: i64,
    pub settled_by: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentFailed {
    pub intent: String,
    pub step: i64,
    pub error: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeUnknown {
    pub intent: String,
    pub step: i64,
    pub tool: String,
    pub why: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentResolved {
    pub intent: String,
    pub step: i64,
    pub tool: String,
    pub action_hash: String,
    pub previous_status: IntentStatus,
    pub resolution: crate::journal::Resolution,
    pub note: Option<String>,
    pub pre: Vec<FileImage>,
    pub post: Vec<FileImage>,
}
