//! A policy that allows everything, for the benches that measure the step protocol rather than a
//! review (`durable_step`, `acp`).

use reins_core::api::{Action, Decision, Policy, PolicyContext, Risk, Verdict};

pub struct PermitAll;

impl Policy for PermitAll {
    fn classify(&self, action: &Action, _cx: &PolicyContext<'_>) -> Verdict {
        Verdict {
            on_timeout: None,
            risk: Risk::Low,
            decision: Decision::Allow,
            reasons: vec![format!("{}: allowed (bench policy)", action.tool())],
            segments: Vec::new(),
        }
    }

    fn version(&self) -> String {
        "permit-all/1".into()
    }
}
