//! Decisions bound to the verdict they were made on (red-team F1, F2, F18): an approval or a grant
//! never carries out an action the policy now rates riskier, or gives a reason the person was not
//! shown, and a grant never covers a protected path.

use crate::approval::Matcher;
use crate::engine::decide::{self, Bound};
use crate::policy::{Decision, Risk, Verdict};

use super::fixtures::*;

fn rated(risk: Risk, reasons: &[&str]) -> Verdict {
    Verdict {
        on_timeout: None,
        risk,
        decision: Decision::Ask,
        reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
        segments: Vec::new(),
    }
}

#[test]
fn an_approved_action_rated_riskier_now_goes_back_to_review() {
    // F1: docs/ was swapped for a link to .vscode/ after the review.
    let a = write("docs/tasks.json", "{}");
    let shown = rated(Risk::Medium, &["writes docs/tasks.json"]);
    let now = rated(
        Risk::High,
        &[
            "docs/tasks.json is a protected path: editor config",
            "writes docs/tasks.json",
        ],
    );
    match decide::bind(a.hash().as_str(), &a.hash(), &[], &[], seen(&shown), &now) {
        Bound::Stale(why) => {
            assert!(why.contains("rated high now, medium when it was approved"), "{why}");
            assert!(why.contains("protected path"), "{why}");
        }
        other => panic!("expected a new review, got {other:?}"),
    }
}

#[test]
fn a_reason_the_review_did_not_show_sends_the_action_back() {
    let a = write("docs/a.md", "x");
    let shown = rated(Risk::Medium, &["writes docs/a.md"]);
    let now = rated(Risk::Medium, &["writes docs/a.md", "the path holds a hidden character"]);
    match decide::bind(a.hash().as_str(), &a.hash(), &[], &[], seen(&shown), &now) {
        Bound::Stale(why) => assert!(why.contains("hidden character"), "{why}"),
        other => panic!("expected a new review, got {other:?}"),
    }
}

#[test]
fn an_action_rated_lower_now_with_no_new_reason_runs() {
    let a = write("docs/a.md", "x");
    let shown = rated(Risk::High, &["writes docs/a.md", "something then"]);
    let now = rated(Risk::Medium, &["writes docs/a.md"]);
    assert_eq!(
        decide::bind(a.hash().as_str(), &a.hash(), &[], &[], seen(&shown), &now),
        Bound::Run
    );
}

#[test]
fn an_edit_approved_without_its_verdict_is_not_guessed_at() {
    let a = write("docs/a.md", "x");
    let now = rated(Risk::Low, &["writes docs/a.md"]);
    assert!(matches!(
        decide::bind(a.hash().as_str(), &a.hash(), &[], &[], None, &now),
        Bound::Stale(_)
    ));
}

#[test]
fn an_exact_grant_does_not_cover_its_action_once_it_is_riskier() {
    // F2: the grant was made from a medium write of docs/ci.yml; docs/ now links into
    // .github/workflows and the same action is high.
    let a = write("docs/ci.yml", "on: push");
    let mut g = grant(&a, Matcher::Exact, a.hash().as_str());
    g.risk = Some(Risk::Medium);
    assert!(decide::granted(&a, Risk::Medium, std::slice::from_ref(&g), place()).is_some());
    assert!(
        decide::granted(&a, Risk::High, &[g], place()).is_none(),
        "riskier than what the person approved"
    );
}

#[test]
fn no_grant_covers_a_protected_path() {
    let a = write(".github/workflows/ci.yml", "on: push");
    for (matcher, pattern) in [
        (Matcher::Exact, a.hash().as_str().to_owned()),
        (Matcher::Glob, "**".to_owned()),
    ] {
        let g = grant(&a, matcher, &pattern);
        assert!(
            decide::granted(&a, Risk::Medium, &[g], place()).is_none(),
            "{matcher:?} grant covered a protected path"
        );
    }
}

#[test]
fn a_grant_without_a_recorded_risk_covers_only_low_risk() {
    let a = write("docs/a.md", "x");
    let mut g = grant(&a, Matcher::Exact, a.hash().as_str());
    g.risk = None;
    assert!(decide::granted(&a, Risk::Low, std::slice::from_ref(&g), place()).is_some());
    assert!(decide::granted(&a, Risk::Medium, &[g], place()).is_none());
}
