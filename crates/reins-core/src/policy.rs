//! The policy seam (step 2 of the protocol). Risk is decided here, by the harness, never by the model.
//! The rule engine arrives with the policy issue; until then [`PermitAll`] allows every action, and the
//! engine already honours `Ask` (a review checkpoint) and `Deny` (an error to the agent).

use serde::Serialize;

use crate::tools::Action;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

/// A decision and the plain-language reasons for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub risk: Risk,
    pub decision: Decision,
    pub reasons: Vec<String>,
}

pub trait Policy: Send + Sync {
    fn classify(&self, action: &Action) -> Verdict;
    /// Recorded with each run, so a change of policy is visible on resume.
    fn version(&self) -> String;
}

/// Allows everything. The default until the policy engine lands.
#[derive(Clone, Copy, Debug, Default)]
pub struct PermitAll;

impl Policy for PermitAll {
    fn classify(&self, action: &Action) -> Verdict {
        Verdict {
            risk: Risk::Low,
            decision: Decision::Allow,
            reasons: vec![format!(
                "{}: allowed (no policy configured yet)",
                action.tool()
            )],
        }
    }

    fn version(&self) -> String {
        "permit-all/1".into()
    }
}
