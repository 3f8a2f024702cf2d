//! The step protocol through the real store: invalid proposals become errors for the agent, the policy
//! seam's Ask parks the run at a review checkpoint, Deny never runs the effect.

use std::sync::Arc;

use reins_core::api::{
    Action, Decision, DriveOutcome, Policy, PolicyContext, Risk, RunState, Silent, StepStatus,
    Verdict,
};
use reins_tests::{plan, PermitAll, Sandbox};

/// Asks about writes, denies deletes, allows the rest.
struct Strict;

impl Policy for Strict {
    fn classify(&self, action: &Action, _cx: &PolicyContext<'_>) -> Verdict {
        let (risk, decision, why) = match action.tool() {
            "fs.write" => (Risk::Medium, Decision::Ask, "writes a file"),
            "fs.delete" => (Risk::High, Decision::Deny, "deletes are not allowed here"),
            _ => (Risk::Low, Decision::Allow, "reads are fine"),
        };
        Verdict {
            on_timeout: None,
            risk,
            decision,
            reasons: vec![why.into()],
            segments: Vec::new(),
        }
    }
    fn version(&self) -> String {
        "strict/test".into()
    }
}

#[tokio::test]
async fn ask_parks_the_run_at_a_review_checkpoint_before_any_effect() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.reins(Arc::new(Strict)).await?;
    let p = plan(
        r#"
name = "review"
goal = "g"
[[steps]]
tool = "fs.delete"
args = { path = "tmp/render-cache.tmp" }
expect = "error"
[[steps]]
tool = "fs.write"
why = "record the fix"
args = { path = "docs/note.md", content = "hello\n" }
"#,
    )?;
    let id = engine.create_run(&p, &sb.ws(), &Silent).await?;
    let outcome = engine.drive(id, &Silent).await?;
    assert!(
        matches!(
            outcome,
            DriveOutcome::NeedsHuman {
                state: RunState::AwaitingApproval,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(
        sb.ws().join("tmp/render-cache.tmp").exists(),
        "a denied delete never runs"
    );
    assert!(
        !sb.ws().join("docs/note.md").exists(),
        "nothing is written before review"
    );

    let detail = engine.run_detail(id).await?;
    let rows = &detail.steps;
    assert_eq!(rows[0].status, StepStatus::Denied);
    assert!(rows[0]
        .result
        .as_deref()
        .unwrap_or("")
        .contains("deletes are not allowed here"));
    assert_eq!(rows[1].status, StepStatus::AwaitingReview);
    assert!(
        rows[1].preview.as_deref().unwrap_or("").contains("+hello"),
        "the reviewer sees the exact diff"
    );
    assert_eq!(rows[1].why.as_deref(), Some("record the fix"));
    assert!(
        detail.intents.is_empty(),
        "no intent exists before a decision"
    );
    let level = detail.checkpoints.last().map(|c| c.level);
    assert_eq!(level, Some(reins_core::api::CheckpointLevel::Review));
    Ok(())
}

#[tokio::test]
async fn invalid_proposals_go_back_to_the_agent_and_touch_nothing() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let outside = sb.tmp.path().join("outside.txt");
    let engine = sb.reins(Arc::new(PermitAll)).await?;
    let p = plan(
        r#"
name = "escape"
goal = "g"
[[steps]]
tool = "fs.write"
args = { path = "../outside.txt", content = "x" }
expect = "error"
expect_output = "climbs out"
[[steps]]
tool = "fs.write"
args = { path = "/etc/reins-test", content = "x" }
expect = "error"
[[steps]]
tool = "net.raw"
args = { command = "rm -rf /" }
expect = "error"
expect_output = "unknown tool"
[[steps]]
tool = "fs.edit"
args = { path = "config/nginx.conf", old = "not there", new = "x" }
expect = "error"
"#,
    )?;
    let id = engine.create_run(&p, &sb.ws(), &Silent).await?;
    let outcome = engine.drive(id, &Silent).await?;
    assert!(
        matches!(
            outcome,
            DriveOutcome::Finished {
                state: RunState::Succeeded,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(!outside.exists() && !std::path::Path::new("/etc/reins-test").exists());
    let detail = engine.run_detail(id).await?;
    let statuses: Vec<&str> = detail.steps.iter().map(|r| r.status.as_str()).collect();
    assert_eq!(statuses, ["invalid", "invalid", "invalid", "failed"]);
    assert!(detail.intents.is_empty());
    Ok(())
}

#[tokio::test]
async fn an_unmet_expectation_fails_the_run_and_stops_it() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.reins(Arc::new(PermitAll)).await?;
    let p = reins_tests::example_plan("guarded-edit.toml")?;
    let id = engine.create_run(&p, &sb.ws(), &Silent).await?;
    match engine.drive(id, &Silent).await? {
        DriveOutcome::Finished {
            state: RunState::Failed,
            summary,
        } => {
            assert!(summary.contains("does not occur"), "{summary}")
        }
        other => panic!("expected a failed run, got {other:?}"),
    }
    assert!(
        !sb.ws().join("docs/changed.md").exists(),
        "no step runs after the failed one"
    );
    Ok(())
}
