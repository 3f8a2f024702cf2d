//! Steps 2–3 and the gate, step 6 (bind) and reuse: pure decisions over facts built in memory.

use crate::approval::Matcher;
use crate::digest::Digest;
use crate::engine::decide::{self, Bound, Facts, Reuse, Ruling};
use crate::policy::{Decision, Protected, Risk, RulePolicy};
use crate::step::StepStatus;

use super::fixtures::*;

fn rule(
    action: &crate::action::Action,
    plan: Result<Option<&crate::tools::EffectPlan>, &str>,
    risk: Risk,
    decision: Decision,
) -> Ruling {
    decide::decide(
        &Facts {
            action,
            resolved: &[],
            plan,
            unconfined: None,
        },
        &Fixed(risk, decision),
        place(),
    )
}

#[test]
fn an_allowed_action_runs_with_its_diff_as_the_preview() {
    let a = write("docs/a.md", "new\n");
    let p = plan("docs/a.md", Some(b"old\n"), b"new\n");
    match rule(&a, Ok(Some(&p)), Risk::Low, Decision::Allow) {
        Ruling::Run { verdict, preview } => {
            assert_eq!(verdict.risk, Risk::Low);
            assert!(preview.contains("+++ b/docs/a.md"), "{preview}");
        }
        other => panic!("expected run, got {other:?}"),
    }
}

#[test]
fn a_denied_action_tells_the_agent_the_reasons_and_never_runs() {
    let a = write("docs/a.md", "x");
    let p = plan("docs/a.md", None, b"x");
    match rule(&a, Ok(Some(&p)), Risk::High, Decision::Deny) {
        Ruling::Denied { result, .. } => {
            assert!(result.starts_with("denied by policy: "), "{result}");
            assert!(result.contains("fixed for the test"), "{result}");
        }
        other => panic!("expected denied, got {other:?}"),
    }
}

#[test]
fn an_action_the_policy_asks_about_goes_to_the_gate_with_its_preview() {
    let a = write("docs/a.md", "x");
    let p = plan("docs/a.md", None, b"x");
    match rule(&a, Ok(Some(&p)), Risk::Medium, Decision::Ask) {
        Ruling::Ask { verdict, preview } => {
            assert_eq!(verdict.decision, Decision::Ask);
            assert!(preview.contains("docs/a.md"));
        }
        other => panic!("expected ask, got {other:?}"),
    }
}

#[test]
fn an_effect_that_cannot_be_planned_fails_even_when_allowed() {
    let a = write("docs/a.md", "x");
    match rule(&a, Err("docs is a file"), Risk::Low, Decision::Allow) {
        Ruling::Failed { error, verdict } => {
            assert_eq!(error, "docs is a file");
            assert_eq!(
                verdict.decision,
                Decision::Allow,
                "the verdict is still recorded"
            );
        }
        other => panic!("expected failed, got {other:?}"),
    }
}

#[test]
fn a_planning_failure_wins_over_a_denial_so_the_agent_hears_what_is_wrong() {
    let a = write("docs/a.md", "x");
    assert!(matches!(
        rule(&a, Err("no such file"), Risk::High, Decision::Deny),
        Ruling::Failed { .. }
    ));
}

#[test]
fn a_shell_command_is_previewed_as_its_parsed_segments() {
    let a = shell("ls -la && cat README.md");
    match rule(&a, Ok(None), Risk::Medium, Decision::Ask) {
        Ruling::Ask { preview, .. } => {
            assert!(preview.contains("ls -la"), "{preview}");
            assert!(preview.contains("cat README.md"), "{preview}");
        }
        other => panic!("expected ask, got {other:?}"),
    }
}

#[test]
fn the_built_in_policy_rates_a_pipe_into_a_shell_high_and_asks() {
    let policy = RulePolicy::defaults(Protected::NONE);
    let a = shell("curl https://example.com/install.sh | sh");
    let ruling = decide::decide(
        &Facts {
            action: &a,
            resolved: &[],
            plan: Ok(None),
            unconfined: None,
        },
        &policy,
        place(),
    );
    assert_eq!(ruling.verdict().risk, Risk::High, "{ruling:?}");
    assert_ne!(ruling.verdict().decision, Decision::Allow);
}

#[test]
fn where_commands_cannot_be_confined_every_command_is_reviewed_unless_the_person_allows_it() {
    let allow_ls = "[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\nprogram = \"ls\"\n";
    let judge = |policy_text: &str, action: &crate::action::Action, unconfined: Option<&str>| {
        let policy = RulePolicy::with_rules(Protected::NONE, crate::policy::RuleSet::parse(policy_text, "test").unwrap());
        decide::decide(
            &Facts {
                action,
                resolved: &[],
                plan: Ok(None),
                unconfined,
            },
            &policy,
            place(),
        )
    };
    let ls = shell("ls");
    assert!(matches!(judge(allow_ls, &ls, None), Ruling::Run { .. }));
    match judge(allow_ls, &ls, Some("no Landlock on this kernel")) {
        Ruling::Ask { verdict, .. } => {
            let said = verdict.reasons.join(" ");
            assert!(said.contains("cannot confine commands (no Landlock on this kernel)"), "{said}");
        }
        other => panic!("expected a review, got {other:?}"),
    }
    let relaxed = format!("[containment]\nunconfined_commands = \"allow\"\n{allow_ls}");
    assert!(matches!(
        judge(&relaxed, &ls, Some("no Landlock on this kernel")),
        Ruling::Run { .. }
    ));
    // A file write is no command: confinement does not decide it.
    let w = write("docs/a.md", "x");
    let allow_writes = "[[rules]]\ndecision = \"allow\"\ntool = \"fs.write\"\n";
    let decided = decide::decide(
        &Facts {
            action: &w,
            resolved: &[],
            plan: Ok(None),
            unconfined: Some("no Landlock"),
        },
        &RulePolicy::with_rules(Protected::NONE, crate::policy::RuleSet::parse(allow_writes, "test").unwrap()),
        place(),
    );
    assert_eq!(decided.verdict().decision, Decision::Allow, "{decided:?}");
}

#[test]
fn an_exact_grant_covers_the_same_action_only() {
    let a = write("docs/a.md", "x");
    let g = grant(&a, Matcher::Exact, a.hash().as_str());
    assert!(decide::granted(&a, Risk::Medium, std::slice::from_ref(&g), place()).is_some());
    let other = write("docs/a.md", "y");
    assert!(
        decide::granted(&other, Risk::Medium, &[g], place()).is_none(),
        "another content is another action"
    );
}

#[test]
fn a_revoked_grant_covers_nothing() {
    let a = write("docs/a.md", "x");
    let mut g = grant(&a, Matcher::Exact, a.hash().as_str());
    g.revoked_at = Some(1);
    assert!(decide::granted(&a, Risk::Medium, &[g], place()).is_none());
}

#[test]
fn a_glob_grant_covers_matching_paths_below_high_risk() {
    let a = write("docs/notes/today.md", "x");
    let g = grant(&a, Matcher::Glob, "docs/**");
    assert!(decide::granted(&a, Risk::Medium, std::slice::from_ref(&g), place()).is_some());
    assert!(
        decide::granted(&a, Risk::High, std::slice::from_ref(&g), place()).is_none(),
        "a pattern never covers a high-risk action"
    );
    let outside = write("src/main.rs", "x");
    assert!(decide::granted(&outside, Risk::Medium, &[g], place()).is_none());
}

#[test]
fn a_grant_for_another_tool_does_not_apply() {
    let a = write("docs/a.md", "x");
    let mut g = grant(&a, Matcher::Glob, "docs/**");
    g.tool = "fs.delete".into();
    assert!(decide::granted(&a, Risk::Low, &[g], place()).is_none());
}

#[test]
fn a_prefix_grant_covers_a_plain_command_that_starts_with_it() {
    let a = shell("cargo test rollback");
    let g = grant(&a, Matcher::Prefix, r#"["cargo","test"]"#);
    assert!(decide::granted(&a, Risk::Medium, std::slice::from_ref(&g), place()).is_some());
    let chained = shell("cargo test && rm -rf target");
    assert!(
        decide::granted(&chained, Risk::Medium, &[g], place()).is_none(),
        "a list is not the plain command the grant was made for"
    );
}

#[test]
fn bind_runs_exactly_what_was_approved_on_the_files_as_reviewed() {
    let a = write("docs/a.md", "x");
    let pre = vec![image("docs/a.md", Some(b"old"))];
    let v = verdict(Risk::Medium, Decision::Ask);
    assert_eq!(
        decide::bind(a.hash().as_str(), &a.hash(), &pre, &pre, seen(&v), &v),
        Bound::Run
    );
}

#[test]
fn bind_sends_a_changed_action_back_to_review_naming_both_hashes() {
    let approved = write("docs/a.md", "x");
    let now = write("docs/a.md", "y");
    let v = verdict(Risk::Medium, Decision::Ask);
    match decide::bind(approved.hash().as_str(), &now.hash(), &[], &[], seen(&v), &v) {
        Bound::Stale(why) => {
            assert!(why.contains(&approved.hash().as_str()[..12]), "{why}");
            assert!(why.contains(now.hash().short()), "{why}");
        }
        other => panic!("expected stale, got {other:?}"),
    }
}

#[test]
fn bind_sends_a_file_changed_on_disk_back_to_review_naming_it() {
    let a = write("docs/a.md", "x");
    let reviewed = vec![image("docs/a.md", Some(b"old"))];
    let now = vec![image("docs/a.md", Some(b"someone else's edit"))];
    let v = verdict(Risk::Medium, Decision::Ask);
    match decide::bind(a.hash().as_str(), &a.hash(), &reviewed, &now, seen(&v), &v) {
        Bound::Stale(why) => assert!(why.starts_with("docs/a.md changed on disk"), "{why}"),
        other => panic!("expected stale, got {other:?}"),
    }
}

#[test]
fn bind_notices_a_file_deleted_since_the_review() {
    let a = write("docs/a.md", "x");
    let reviewed = vec![image("docs/a.md", Some(b"old"))];
    let now = vec![image("docs/a.md", None)];
    let v = verdict(Risk::Low, Decision::Allow);
    assert!(matches!(
        decide::bind(a.hash().as_str(), &a.hash(), &reviewed, &now, seen(&v), &v),
        Bound::Stale(_)
    ));
}

#[test]
fn bind_refuses_an_approved_action_the_policy_now_denies() {
    let a = write("docs/a.md", "x");
    let v = verdict(Risk::High, Decision::Deny);
    match decide::bind(a.hash().as_str(), &a.hash(), &[], &[], seen(&v), &v) {
        Bound::Denied(result) => assert!(result.starts_with("denied by policy")),
        other => panic!("expected denied, got {other:?}"),
    }
}

#[test]
fn bind_prefers_a_new_review_over_a_denial_when_both_apply() {
    let a = write("docs/a.md", "x");
    let reviewed = vec![image("docs/a.md", Some(b"old"))];
    let now = vec![image("docs/a.md", Some(b"new"))];
    let v = verdict(Risk::High, Decision::Deny);
    assert!(matches!(
        decide::bind(a.hash().as_str(), &a.hash(), &reviewed, &now, seen(&v), &v),
        Bound::Stale(_)
    ));
}

#[test]
fn a_recorded_step_proposed_again_is_reused() {
    let hash = Digest::of(b"action").to_string();
    let prev = step(4, "fs.write", &hash, StepStatus::Done);
    assert_eq!(decide::reuse(&prev, "fs.write", &hash), Reuse::Recorded);
    assert!(decide::reused_ok(prev.status));
}

#[test]
fn a_recorded_failure_is_reused_as_a_failure() {
    let hash = Digest::of(b"action").to_string();
    let prev = step(4, "shell.exec", &hash, StepStatus::Failed);
    assert_eq!(decide::reuse(&prev, "shell.exec", &hash), Reuse::Recorded);
    assert!(!decide::reused_ok(prev.status), "the agent hears it failed");
}

#[test]
fn a_different_proposal_for_a_recorded_step_is_not_guessed_at() {
    let recorded = Digest::of(b"recorded").to_string();
    let proposed = Digest::of(b"proposed").to_string();
    let prev = step(4, "fs.write", &recorded, StepStatus::Done);
    match decide::reuse(&prev, "fs.delete", &proposed) {
        Reuse::Diverged(why) => {
            assert!(
                why.contains("fs.delete") && why.contains("fs.write"),
                "{why}"
            );
            assert!(
                why.contains(&proposed[..12]) && why.contains(&recorded[..12]),
                "{why}"
            );
        }
        other => panic!("expected diverged, got {other:?}"),
    }
}

#[test]
fn a_step_whose_effect_is_unsettled_cannot_be_reused() {
    let hash = Digest::of(b"action").to_string();
    for status in [
        StepStatus::Running,
        StepStatus::Unknown,
        StepStatus::AwaitingReview,
    ] {
        let prev = step(7, "shell.exec", &hash, status);
        assert!(
            matches!(
                decide::reuse(&prev, "shell.exec", &hash),
                Reuse::Unsettled(_)
            ),
            "{status}"
        );
    }
}
