//! The step protocol through the real store: invalid proposals become errors for the agent, the policy
//! seam's Ask parks the run at a review checkpoint, Deny never runs the effect.

use std::sync::Arc;

use reins_core::engine::{DriveOutcome, Silent};
use reins_core::policy::PermitAll;
use reins_core::policy::{Decision, Policy, Risk, Verdict};
use reins_core::run::RunState;
use reins_core::store::{intents, steps};
use reins_core::tools::Action;
use reins_core::workspace::Workspace;
use reins_tests::{plan, Sandbox};

/// Asks about writes, denies deletes, allows the rest.
struct Strict;

impl Policy for Strict {
    fn classify(&self, action: &Action, _cx: &reins_core::policy::Context<'_>) -> Verdict {
        let (risk, decision, why) = match action.tool() {
            "fs.write" => (Risk::Medium, Decision::Ask, "writes a file"),
            "fs.delete" => (Risk::High, Decision::Deny, "deletes are not allowed here"),
            _ => (Risk::Low, Decision::Allow, "reads are fine"),
        };
        Verdict {
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
    let engine = sb.engine(Arc::new(Strict)).await?;
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
    let id = engine
        .create_script_run(&p, &Workspace::open(&sb.ws())?)
        .await?;
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

    let pool = engine.store().pool();
    let rows = steps::list(pool, id).await?;
    assert_eq!(rows[0].status, reins_core::step::StepStatus::Denied);
    assert!(rows[0]
        .result
        .as_deref()
        .unwrap_or("")
        .contains("deletes are not allowed here"));
    assert_eq!(rows[1].status, reins_core::step::StepStatus::AwaitingReview);
    assert!(
        rows[1].preview.as_deref().unwrap_or("").contains("+hello"),
        "the reviewer sees the exact diff"
    );
    assert_eq!(rows[1].why.as_deref(), Some("record the fix"));
    assert!(
        intents::list(pool, id).await?.is_empty(),
        "no intent exists before a decision"
    );
    let level: String = sqlx::query_scalar(
        "SELECT level FROM checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
    )
    .bind(id.to_string())
    .fetch_one(pool)
    .await?;
    assert_eq!(level, "review");
    Ok(())
}

#[tokio::test]
async fn invalid_proposals_go_back_to_the_agent_and_touch_nothing() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let outside = sb.tmp.path().join("outside.txt");
    let engine = sb.engine(Arc::new(PermitAll)).await?;
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
    let id = engine
        .create_script_run(&p, &Workspace::open(&sb.ws())?)
        .await?;
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
    let rows = steps::list(engine.store().pool(), id).await?;
    let statuses: Vec<&str> = rows.iter().map(|r| r.status.as_str()).collect();
    assert_eq!(statuses, ["invalid", "invalid", "invalid", "failed"]);
    assert!(intents::list(engine.store().pool(), id).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn an_unmet_expectation_fails_the_run_and_stops_it() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.engine(Arc::new(PermitAll)).await?;
    let p = reins_tests::example_plan("guarded-edit.toml")?;
    let id = engine
        .create_script_run(&p, &Workspace::open(&sb.ws())?)
        .await?;
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
