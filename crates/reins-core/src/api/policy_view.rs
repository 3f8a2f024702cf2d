//! The policy as people see it: the rules in force in the order they are weighed, where each comes
//! from, what Reins does before any rule, and the protected places; reading the file again when it
//! changes, keeping the last good rules when it does not parse.

use serde::Serialize;

use super::Reins;
use crate::error::{Error, Result};
use crate::policy::rules::RuleLine;

/// How often a watch looks at the policy file for changes.
pub const POLICY_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// What the harness decides before and around the rules; no file can change these.
const BUILT_IN: &[&str] = &[
    "Anything Reins cannot parse or does not understand is high risk, and is reviewed.",
    "Protected places (below) are high risk whatever a rule says; a path outside the workspace is refused.",
    "High risk is always reviewed, even where a rule allows it.",
    "Reading inside the workspace runs without review; every action that changes something is reviewed unless a rule or a grant allows it.",
    "A workspace's .reins/policy.toml may add deny and ask rules, never allow rules.",
];

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProtectedPlace {
    pub place: String,
    pub why: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PolicyState {
    /// The user's policy file.
    pub file: String,
    pub file_exists: bool,
    /// Why the file's current text is not in force; the last good rules below are.
    pub broken: Option<String>,
    /// The version recorded with each decision (changes with the rules in force).
    pub version: String,
    /// What Reins decides before any rule.
    pub built_in: Vec<String>,
    /// The file's rules in force, in the order they are weighed: deny, then ask, then allow.
    pub rules: Vec<RuleLine>,
    pub protected: Vec<ProtectedPlace>,
}

impl Reins {
    fn rule_policy(&self) -> Result<&crate::policy::RulePolicy> {
        self.rules.as_deref().ok_or_else(|| {
            Error::Invalid("this Reins runs with a policy given in code, not a file".into())
        })
    }

    /// The policy in force now.
    pub fn policy_state(&self) -> Result<PolicyState> {
        use crate::policy::Policy as _;
        let rules = self.rule_policy()?;
        Ok(PolicyState {
            file: self.policy_file.display().to_string(),
            file_exists: self.policy_file.exists(),
            broken: rules.broken(),
            version: rules.version(),
            built_in: BUILT_IN.iter().map(|s| (*s).to_owned()).collect(),
            rules: rules.user_rules().lines(),
            protected: rules
                .protected()
                .listed()
                .into_iter()
                .map(|(place, why)| ProtectedPlace { place, why })
                .collect(),
        })
    }

    /// Reads the policy file again; its rules decide from the next action on. A file that does not
    /// parse leaves the last good rules in force, and the state says why.
    pub fn reload_policy(&self) -> Result<PolicyState> {
        let rules = self.rule_policy()?;
        if let Err(e) = rules.reload() {
            tracing::warn!("the policy file did not load; the last good rules stay: {e}");
        }
        self.policy_state()
    }

    /// Reads the policy file again whenever it changes (size or modification time, looked at every
    /// `poll`), until the harness drains; a policy given in code is never reloaded. The app and
    /// `reins worker` both run this, so an edited file decides the next action without a restart.
    pub async fn watch_policy(&self, poll: std::time::Duration) {
        if self.rules.is_none() {
            return;
        }
        let file = self.policy_file.clone();
        let seen = |f: &std::path::Path| {
            std::fs::metadata(f)
                .ok()
                .map(|m| (m.len(), m.modified().ok()))
        };
        let mut last = seen(&file);
        loop {
            tokio::time::sleep(poll).await;
            if self.draining() {
                return;
            }
            let now = seen(&file);
            if now == last {
                continue;
            }
            last = now;
            match self.reload_policy() {
                Ok(state) => match state.broken {
                    Some(why) => tracing::warn!("the policy file changed but does not load: {why}"),
                    None => tracing::info!("policy file read again: {} rules", state.rules.len()),
                },
                Err(e) => tracing::warn!("cannot read the policy again: {e}"),
            }
        }
    }

    /// Runs `work` while the policy file is watched (as the app watches it), so a long run or a
    /// worker follows an edited file; returns what `work` returns.
    pub async fn watching_policy<F: std::future::Future>(&self, work: F) -> F::Output {
        let watch = async {
            self.watch_policy(POLICY_POLL).await;
            std::future::pending::<std::convert::Infallible>().await
        };
        tokio::select! {
            out = work => out,
            never = watch => match never {},
        }
    }
}
