//! A review nobody decides in time: by default it pauses (it stays open, the run waits, and a
//! decision made later carries the run on); a rule with `on_timeout = "deny"` expires it instead
//! and the action fails closed. The audit log says which happened.

use reins_core::api::{ApprovalStatus, DriveOutcome, OnTimeout, RunState, Silent, StepStatus};
use reins_tests::review::{approve_once, pending, succeeded, waiting};
use reins_tests::{step, Sandbox};

const WRITE_NOTE: &str = r#"
name = "note"
goal = "leave a note"
[[steps]]
tool = "fs.write"
expect = "error"
args = { path = "docs/note.md", content = "rotate daily\n" }
"#;

/// Long enough for a review with a one-second timeout to be overdue.
async fn past_the_deadline() {
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
}

#[tokio::test]
async fn a_review_nobody_decides_pauses_and_a_later_decision_carries_the_run_on(
) -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb
        .reins_with_rules("[review]\nexpire_after_secs = 1\n")
        .await?;
    let run = sb
        .start(&engine, &WRITE_NOTE.replace("expect = \"error\"\n", ""))
        .await?;
    assert!(waiting(&engine.drive(run, &Silent).await?));
    let a = pending(&engine, run).await?;
    assert_eq!(a.on_timeout, OnTimeout::Pause, "pause is the default");
    past_the_deadline().await;

    // The worker's round of watching reviews finds it overdue: it pauses, it does not expire.
    let listed = engine.approvals(None, Some(run)).await?;
    let paused = listed
        .iter()
        .find(|x| x.id == a.id)
        .ok_or_else(|| anyhow::anyhow!("the review vanished"))?;
    assert_eq!(paused.status, ApprovalStatus::Pending);
    assert!(paused.paused_at.is_some(), "{paused:?}");
    let outcome = engine.drive(run, &Silent).await?;
    assert!(
        matches!(
            outcome,
            DriveOutcome::Skipped {
                state: RunState::AwaitingApproval,
                ..
            }
        ),
        "the run still waits: {outcome:?}"
    );
    assert!(!sb.ws().join("docs/note.md").exists());
    let kinds = reins_tests::kinds(&engine, run).await?;
    assert_eq!(
        kinds.iter().filter(|k| *k == "approval.paused").count(),
        1,
        "{kinds:?}"
    );
    assert!(!kinds.iter().any(|k| k == "approval.expired"), "{kinds:?}");
    // Another round does not pause it twice.
    engine.approvals(None, Some(run)).await?;
    assert_eq!(
        reins_tests::kinds(&engine, run)
            .await?
            .iter()
            .filter(|k| *k == "approval.paused")
            .count(),
        1
    );

    // Decided long after its deadline, the run goes on and the file lands.
    let decided = engine.approve(&a.id, approve_once()).await?;
    assert_eq!(decided.approval.status, ApprovalStatus::Approved);
    assert!(succeeded(&engine.drive(run, &Silent).await?));
    assert_eq!(sb.read("docs/note.md")?, "rotate daily\n");
    let events = reins_tests::events(&engine, Some(run)).await?;
    assert!(
        events
            .iter()
            .any(|e| e.kind == "approval.paused" && e.sentence.contains("timed out and paused")),
        "the audit log says it paused"
    );
    Ok(())
}

#[tokio::test]
async fn a_review_overdue_when_the_person_decides_pauses_first_and_the_decision_stands(
) -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb
        .reins_with_rules("[review]\nexpire_after_secs = 1\non_timeout = \"pause\"\n")
        .await?;
    let run = sb
        .start(&engine, &WRITE_NOTE.replace("expect = \"error\"\n", ""))
        .await?;
    engine.drive(run, &Silent).await?;
    let a = pending(&engine, run).await?;
    past_the_deadline().await;
    // Nobody listed the inbox meanwhile: the decision itself finds it overdue.
    engine.approve(&a.id, approve_once()).await?;
    assert!(succeeded(&engine.drive(run, &Silent).await?));
    assert_eq!(sb.read("docs/note.md")?, "rotate daily\n");
    let kinds = reins_tests::kinds(&engine, run).await?;
    let paused = kinds.iter().position(|k| k == "approval.paused");
    let approved = kinds.iter().position(|k| k == "approval.approved");
    assert!(paused.is_some() && paused < approved, "{kinds:?}");
    Ok(())
}

#[tokio::test]
async fn a_rule_that_says_deny_expires_its_review_and_fails_closed() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    // Paused by default, but this rule's reviews deny at the timeout.
    let engine = sb
        .reins_with_rules(
            "[review]\nexpire_after_secs = 1\n\n[[rules]]\ndecision = \"ask\"\ntool = \"fs.write\"\non_timeout = \"deny\"\n",
        )
        .await?;
    let run = sb.start(&engine, WRITE_NOTE).await?;
    engine.drive(run, &Silent).await?;
    let a = pending(&engine, run).await?;
    assert_eq!(a.on_timeout, OnTimeout::Deny);
    past_the_deadline().await;
    assert!(
        engine.approve(&a.id, approve_once()).await.is_err(),
        "too late to approve"
    );
    let row = engine.approval(&a.id).await?;
    assert_eq!(row.status, ApprovalStatus::Expired);
    assert!(row.paused_at.is_none());
    engine.drive(run, &Silent).await?;
    let step = step(&engine, run, 1)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no step"))?;
    assert_eq!(step.status, StepStatus::Expired);
    assert!(!sb.ws().join("docs/note.md").exists());
    let kinds = reins_tests::kinds(&engine, run).await?;
    assert!(kinds.iter().any(|k| k == "approval.expired"), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "approval.paused"), "{kinds:?}");
    Ok(())
}

#[tokio::test]
async fn on_timeout_is_refused_where_it_means_nothing() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let err = sb
        .reins_with_rules(
            "[[rules]]\ndecision = \"allow\"\ntool = \"fs.write\"\non_timeout = \"pause\"\n",
        )
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("an allow rule with on_timeout was accepted"))?;
    assert!(
        format!("{err:#}").contains("only makes sense on an ask rule"),
        "{err:#}"
    );
    let err = sb
        .reins_with_rules("[review]\non_timeout = \"later\"\n")
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("an unknown on_timeout was accepted"))?;
    assert!(format!("{err:#}").contains("later"), "{err:#}");
    Ok(())
}
