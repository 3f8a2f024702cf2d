//! Step 5, a person's decision, and the refusal a rejected or expired review becomes: checks made
//! before anything is written.

use crate::approval::{Scope, Status};
use crate::engine::bind::refusal;
use crate::engine::decision::{
    check_scope, check_seen, edited_call, openness, EditedAction, Openness,
};
use crate::error::Error;
use crate::step::StepStatus;

use super::fixtures::approval;

const NOW: i64 = 50_000;

#[test]
fn a_pending_approval_before_its_deadline_is_open() {
    assert_eq!(
        openness(&approval(Status::Pending, NOW + 1), NOW),
        Openness::Open
    );
}

#[test]
fn a_pending_approval_past_its_deadline_times_out() {
    assert_eq!(
        openness(&approval(Status::Pending, NOW), NOW),
        Openness::Overdue
    );
}

#[test]
fn a_review_that_timed_out_and_paused_stays_open_with_no_deadline() {
    let mut a = approval(Status::Pending, NOW);
    a.paused_at = Some(NOW);
    assert_eq!(openness(&a, NOW + 86_400_000), Openness::Open);
    a.status = Status::Approved;
    assert!(matches!(openness(&a, NOW), Openness::Decided(_)));
}

#[test]
fn a_decision_is_never_changed() {
    for status in [Status::Approved, Status::Rejected, Status::Expired] {
        match openness(&approval(status, NOW + 1), NOW) {
            Openness::Decided(why) => {
                assert!(why.contains("a decision is never changed"), "{why}");
                assert!(why.contains(status.as_str()), "{why}");
            }
            other => panic!("{status}: expected closed, got {other:?}"),
        }
    }
}

#[test]
fn a_superseded_approval_points_at_its_successor() {
    let mut a = approval(Status::Superseded, NOW + 1);
    a.superseded_by = Some("0193ffff-0000-7000-8000-000000000009".into());
    a.stale_reason = Some("docs/a.md changed on disk".into());
    match openness(&a, NOW) {
        Openness::Superseded(why) => {
            assert!(
                why.contains("0193ffff-0000-7000-8000-000000000009"),
                "{why}"
            );
            assert!(why.contains("docs/a.md changed on disk"), "{why}");
        }
        other => panic!("expected closed, got {other:?}"),
    }
}

#[test]
fn an_approval_binds_to_the_hash_the_person_saw() {
    let a = approval(Status::Pending, NOW + 1);
    assert!(check_seen(&a, None).is_ok());
    assert!(check_seen(&a, Some(&a.action_hash[..8])).is_ok());
    assert!(matches!(
        check_seen(&a, Some(&"ef".repeat(32))),
        Err(Error::Conflict(_))
    ));
    assert!(
        check_seen(&a, Some(&a.action_hash[..7])).is_err(),
        "fewer than 8 characters bind to nothing"
    );
}

#[test]
fn a_pattern_needs_a_lasting_scope() {
    assert!(matches!(
        check_scope(Scope::Once, Some("docs/**")),
        Err(Error::Invalid(_))
    ));
    assert!(check_scope(Scope::Once, None).is_ok());
    assert!(check_scope(Scope::Run, Some("docs/**")).is_ok());
}

#[test]
fn an_edit_keeps_the_proposed_tool() {
    let a = approval(Status::Pending, NOW + 1);
    let same = EditedAction {
        tool: None,
        args: serde_json::json!({ "path": "docs/a.md", "content": "y" }),
    };
    let call = edited_call(&a, &same).unwrap();
    assert_eq!(call.tool, "fs.write");
    let swapped = EditedAction {
        tool: Some("fs.delete".into()),
        args: serde_json::json!({ "path": "docs/a.md" }),
    };
    assert!(matches!(edited_call(&a, &swapped), Err(Error::Invalid(_))));
}

#[test]
fn a_rejection_reaches_the_agent_with_the_reviewers_reason() {
    let mut a = approval(Status::Rejected, NOW);
    a.note = Some("use the staging config".into());
    let (status, result) = refusal(&a);
    assert_eq!(status, StepStatus::Rejected);
    assert_eq!(result, "rejected by the reviewer: use the staging config");
}

#[test]
fn an_expired_review_tells_the_agent_nothing_ran() {
    let (status, result) = refusal(&approval(Status::Expired, NOW));
    assert_eq!(status, StepStatus::Expired);
    assert!(result.contains("did not run"), "{result}");
}
