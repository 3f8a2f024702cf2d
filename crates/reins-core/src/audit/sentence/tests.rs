//! Sentences read back from stored payloads.

use super::*;
use crate::event::{self as ev, Event};
use crate::run::RunState;

fn stored(actor: Actor, kind: impl Into<Kind>, names: &dyn Names) -> String {
    let e = Event::new(actor, None, kind);
    of_stored(e.kind.name(), actor.as_str(), &e.payload(), names)
}

#[test]
fn an_approval_reads_as_who_did_what_to_which_action() {
    let names = Lookup {
            approvals: HashMap::from([(
        "a1".to_owned(),
        action_words(&crate::action::ToolCall {
            tool: "fs.edit".into(),
            args: serde_json::json!({"path": "config/logrotate.conf", "old": "x", "new": "y"}),
        }),
        )]),
        ..Lookup::default()
    };
    let approved = ev::Approved {
        approval: "a1".into(),
        step: 3,
        tool: "fs.edit".into(),
        by: "user:local".into(),
        action_hash: "h".into(),
        preview_sha256: "p".into(),
        risk: crate::policy::Risk::Medium,
        scope: crate::approval::Scope::Once,
        note: None,
        left_out: Vec::new(),
    };
    let from_notification = ev::Approved {
        by: crate::view::face::person(Some(crate::event::NOTIFICATION_FACE)),
        ..approved.clone()
    };
    assert_eq!(
        stored(Actor::User, approved, &names),
        "You approved fs.edit on config/logrotate.conf (once)"
    );
    assert_eq!(
        stored(Actor::User, from_notification, &names),
        "You approved fs.edit on config/logrotate.conf (once) from the notification"
    );
    let rejected = ev::Rejected {
        approval: "a2".into(),
        step: 4,
        tool: "shell.exec".into(),
        by: "user:local".into(),
        action_hash: "h".into(),
        preview_sha256: "p".into(),
        reason: "never delete build outputs".into(),
        siblings: Vec::new(),
    };
    assert_eq!(
        stored(Actor::User, rejected.clone(), &names),
        "You rejected approval a2: never delete build outputs",
        "an approval the reader could not find is named by its id"
    );
    let with_siblings = ev::Rejected {
        siblings: vec!["fs_write".into(), "shell_exec".into()],
        ..rejected
    };
    assert_eq!(
        stored(Actor::User, with_siblings, &names),
        "You rejected approval a2 (and the 2 calls queued after it: fs_write, shell_exec): never delete build outputs"
    );
}

#[test]
fn kinds_that_share_a_name_read_back_as_themselves() {
    let none = Lookup::default();
    let refreshed = ev::Refreshed {
        approval: "a1".into(),
        by: "worker".into(),
        why: "docs/note.md changed".into(),
        preview_sha256: "p".into(),
    };
    assert!(stored(Actor::Harness, refreshed, &none).contains("shown again"));
    let superseded = ev::Superseded {
        approval: "a1".into(),
        by: "worker".into(),
        why: "the action changed".into(),
    };
    assert!(stored(Actor::Harness, superseded, &none).contains("no longer holds"));
    let moved = ev::RunMoved {
        from: RunState::Running,
        to: RunState::Paused,
    };
    assert_eq!(
        stored(Actor::User, ev::Kind::Paused(moved), &none),
        "You paused the run"
    );
    let safe = ev::PausedAtSafePoint {
        checkpoint: 7,
        verified: true,
        reason: "asked by a person".into(),
    };
    assert_eq!(
        stored(Actor::Harness, safe, &none),
        "The run paused at checkpoint 7 (verified): asked by a person"
    );
    let resolve = ev::ResumedAfterResolve {
        from: RunState::Suspended,
        to: RunState::Queued,
        after: "intent.resolved".into(),
    };
    assert!(stored(Actor::User, resolve, &none).contains("settled"));
}

#[test]
fn a_payload_of_no_known_shape_says_so() {
    let none = Lookup::default();
    let s = of_stored("approval.approved", "user", &serde_json::json!({"x": 1}), &none);
    assert!(s.contains("cannot read"), "{s}");
    let s = of_stored("no.such_kind", "user", &serde_json::json!({}), &none);
    assert!(s.contains("cannot read"), "{s}");
    let s = of_stored("memory.switched_on", "nobody", &serde_json::json!({}), &none);
    assert!(s.contains("cannot read"), "an unknown actor: {s}");
}

#[test]
fn a_policy_decision_names_the_step_the_risk_and_the_reasons() {
    let p = ev::PolicyDecided {
        step: 2,
        tool: "shell.exec".into(),
        action_hash: "h".into(),
        risk: crate::policy::Risk::High,
        decision: crate::policy::Decision::Ask,
        reasons: vec!["deletes files recursively".into()],
        policy: "built-in".into(),
    };
    assert_eq!(
        stored(Actor::Harness, p, &Lookup::default()),
        "The policy asked for review of step 2 (shell.exec, high risk): deletes files recursively"
    );
}

#[test]
fn an_agent_message_reads_as_its_words() {
    let none = Lookup::default();
    let said = ev::AgentReported {
        what: "message".into(),
        detail: serde_json::json!({"text": "I will **rotate** the logs.\nThen check."}),
    };
    assert_eq!(
        stored(Actor::Agent, said, &none),
        "The agent said “I will **rotate** the logs. …”"
    );
    let plan = ev::AgentReported {
        what: "plan".into(),
        detail: serde_json::json!({"entries": []}),
    };
    assert_eq!(stored(Actor::Agent, plan, &none), "The agent reported its plan");
}
