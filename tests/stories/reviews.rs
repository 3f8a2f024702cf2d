//! Review checkpoints through the real store and the default policy: nothing runs before a decision;
//! an approval runs exactly the approved (or edited) action; a rejection reaches the agent; a file
//! changed on disk or an action swapped after review is reviewed again; a
//! decision is never overwritten; grants are counted and revocable.

use reins_core::api::{ApprovalStatus, EditedAction, RunState, Scope, Silent};
use reins_tests::review::{approve_once, pending, succeeded, waiting};
use reins_tests::{intent, raw_db, step, Sandbox};

const WRITE_NOTE: &str = r#"
name = "note"
goal = "leave a note"
[[steps]]
tool = "fs.write"
why = "tell on-call what changed"
args = { path = "docs/note.md", content = "rotate daily\n" }
"#;

#[tokio::test]
async fn nothing_runs_before_approval_and_the_approval_runs_exactly_that_action(
) -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let run = sb.start(&engine, WRITE_NOTE).await?;
    assert!(waiting(&engine.drive(run, &Silent).await?));
    assert!(
        !sb.ws().join("docs/note.md").exists(),
        "parked before the effect"
    );
    let a = pending(&engine, run).await?;
    assert_eq!(a.tool, "fs.write");
    assert_eq!(a.risk, reins_core::api::Risk::Medium);
    assert!(a.preview.contains("+rotate daily"), "{}", a.preview);
    let context: serde_json::Value = serde_json::to_value(&a.context)?;
    assert_eq!(context["why"], "tell on-call what changed");
    assert_eq!(context["goal"], "leave a note");
    assert_eq!(
        a.action_hash,
        reins_core::api::Digest::of(a.action.canonical_text().as_bytes()).to_string(),
        "the approval binds to the hash of the exact canonical action"
    );

    let decided = engine.approve(&a.id, approve_once()).await?;
    assert_eq!(decided.run_state, RunState::Queued);
    let outcome = engine.drive(run, &Silent).await?;
    assert!(succeeded(&outcome), "{outcome:?}");
    assert_eq!(sb.read("docs/note.md")?, "rotate daily\n");
    let intent = intent(&engine, run, 1).await?;
    assert_eq!(
        intent.map(|i| i.status),
        Some(reins_core::api::IntentStatus::Confirmed)
    );
    let k = reins_tests::kinds(&engine, run).await?;
    for kind in [
        "approval.requested",
        "approval.approved",
        "intent.pending",
        "intent.confirmed",
    ] {
        assert!(k.iter().any(|x| x == kind), "{kind} missing from {k:?}");
    }
    // Going on after a review is no recovery: nothing was interrupted.
    let detail = engine.run_detail(run).await?;
    assert_eq!(detail.attempts.len(), 2, "a second attempt carried it out");
    assert!(
        detail.recovery_summary.is_none(),
        "{:?}",
        detail.recovery_summary
    );
    // A decision is never changed.
    let again = engine.approve(&a.id, approve_once()).await;
    assert!(again.is_err_and(|e| e.to_string().contains("already approved")));
    let reject = engine.reject(&a.id, "too late", "user:test").await;
    assert!(reject.is_err());
    Ok(())
}

#[tokio::test]
async fn an_edited_approval_runs_the_edit_and_records_both() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let (run, a) = sb.to_review(&engine, WRITE_NOTE).await?;
    let edit = EditedAction {
        tool: Some("fs.write".into()),
        args: serde_json::json!({ "path": "docs/note.md", "content": "rotate daily, keep 14\n" }),
    };
    let mut req = approve_once();
    req.edited = Some(edit);
    let decided = engine.approve(&a.id, req).await?;
    let row = decided.approval;
    let edited = row
        .edited
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("the edit is recorded"))?;
    assert_ne!(edited.hash, a.action_hash);
    assert!(edited.preview.contains("+rotate daily, keep 14"));
    engine.drive(run, &Silent).await?;
    assert_eq!(
        sb.read("docs/note.md")?,
        "rotate daily, keep 14\n",
        "the edit is what ran"
    );
    assert!(reins_tests::kinds(&engine, run)
        .await?
        .iter()
        .any(|k| k == "approval.edited"));
    // An edit may not change the tool.
    let (_, b) = sb.to_review(&engine, WRITE_NOTE).await?;
    let mut swap = approve_once();
    swap.edited = Some(EditedAction {
        tool: Some("fs.delete".into()),
        args: serde_json::json!({ "path": "config/app.toml" }),
    });
    assert!(engine.approve(&b.id, swap).await.is_err());
    Ok(())
}

#[tokio::test]
async fn a_rejection_reaches_the_agent_and_nothing_runs() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let (run, a) = sb
        .to_review(
            &engine,
            &WRITE_NOTE.replace("args =", "expect = \"error\"\nargs ="),
        )
        .await?;
    assert!(
        engine.reject(&a.id, "  ", "user:test").await.is_err(),
        "a reason is required"
    );
    engine
        .reject(&a.id, "we keep notes in the wiki", "user:test")
        .await?;
    let outcome = engine.drive(run, &Silent).await?;
    assert!(succeeded(&outcome), "{outcome:?}");
    let step = step(&engine, run, 1)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no step"))?;
    assert_eq!(step.status, reins_core::api::StepStatus::Rejected);
    assert!(step
        .result
        .is_some_and(|r| r.contains("we keep notes in the wiki")));
    assert!(!sb.ws().join("docs/note.md").exists());
    assert!(
        engine.run_detail(run).await?.intents.is_empty(),
        "no intent, no effect"
    );
    Ok(())
}

const EDIT_CONF: &str = r#"
name = "conf"
goal = "fix rotation"
[[steps]]
tool = "fs.edit"
args = { path = "config/logrotate.conf", old = "    rotate = never\n", new = "    rotate 7\n" }
"#;

#[tokio::test]
async fn a_file_changed_on_disk_after_review_is_reviewed_again() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let conf = sb.ws().join("config/logrotate.conf");
    // Changed before the decision: approving the old diff is refused, a fresh approval replaces it.
    let (run, a) = sb.to_review(&engine, EDIT_CONF).await?;
    std::fs::write(&conf, sb.read("config/logrotate.conf")? + "# hand edit\n")?;
    let err = engine
        .approve(&a.id, approve_once())
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        err.as_deref()
            .is_some_and(|e| e.contains("changed on disk")),
        "{err:?}"
    );
    let fresh = pending(&engine, run).await?;
    assert_ne!(fresh.id, a.id);
    assert_ne!(
        fresh.pre_images, a.pre_images,
        "made from the file as it is now"
    );
    let old = engine.approval(&a.id).await?;
    assert_eq!(old.status, ApprovalStatus::Superseded);
    assert_eq!(old.superseded_by.as_deref(), Some(fresh.id.as_str()));

    // Changed after the decision, before execution: the bind check catches it; nothing runs.
    engine.approve(&fresh.id, approve_once()).await?;
    let before = sb.read("config/logrotate.conf")? + "# second hand edit\n";
    std::fs::write(&conf, &before)?;
    assert!(
        waiting(&engine.drive(run, &Silent).await?),
        "reviewed again"
    );
    assert_eq!(
        sb.read("config/logrotate.conf")?,
        before,
        "the approved diff did not run"
    );
    let third = pending(&engine, run).await?;
    let second = engine.approval(&fresh.id).await?;
    assert_eq!(second.status, ApprovalStatus::Superseded);
    assert!(second
        .stale_reason
        .is_some_and(|r| r.contains("config/logrotate.conf")));
    engine.approve(&third.id, approve_once()).await?;
    engine.drive(run, &Silent).await?;
    assert!(sb.read("config/logrotate.conf")?.contains("    rotate 7\n"));
    Ok(())
}

#[tokio::test]
async fn an_action_swapped_after_approval_does_not_run() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let (run, a) = sb.to_review(&engine, WRITE_NOTE).await?;
    engine.approve(&a.id, approve_once()).await?;
    // Someone with database access swaps the approved action for another.
    let evil = r#"{"tool":"fs.write","args":{"content":"pwned\n","path":"docs/note.md"}}"#;
    sqlx::query("UPDATE approvals SET action = $1 WHERE id = $2")
        .bind(evil)
        .bind(&a.id)
        .execute(&raw_db(&engine).await?)
        .await?;
    assert!(waiting(&engine.drive(run, &Silent).await?));
    assert!(
        !sb.ws().join("docs/note.md").exists(),
        "the swapped action did not run"
    );
    let old = engine.approval(&a.id).await?;
    assert_eq!(old.status, ApprovalStatus::Superseded);
    assert!(old
        .stale_reason
        .is_some_and(|r| r.contains("changed after it was approved")));
    let fresh = pending(&engine, run).await?;
    assert!(
        fresh.preview.contains("+pwned"),
        "the new review shows what would really run"
    );
    Ok(())
}

#[tokio::test]
async fn a_paused_review_is_decided_and_carried_out_on_resume() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let run = sb.start(&engine, WRITE_NOTE).await?;
    engine.drive(run, &Silent).await?;
    engine.pause(run).await?;
    // Resumed while still pending: it waits for the same approval again (no new one).
    engine
        .resume(run, reins_core::api::ResumeMode::Continue)
        .await?;
    let outcome = engine.drive(run, &Silent).await?;
    assert!(waiting(&outcome), "{outcome:?}");
    let a = pending(&engine, run).await?;
    engine.pause(run).await?;
    let decided = engine.approve(&a.id, approve_once()).await?;
    assert_eq!(
        decided.run_state,
        RunState::Paused,
        "a paused run stays paused"
    );
    engine
        .resume(run, reins_core::api::ResumeMode::Continue)
        .await?;
    engine.drive(run, &Silent).await?;
    assert_eq!(sb.read("docs/note.md")?, "rotate daily\n");
    // Paused while parked for review, nothing was under way: no recovery to show.
    let detail = engine.run_detail(run).await?;
    assert!(
        detail.recovery_summary.is_none(),
        "{:?}",
        detail.recovery_summary
    );
    Ok(())
}

#[tokio::test]
async fn grants_are_counted_scoped_and_revocable() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let twice = r#"
name = "twice"
goal = "g"
[[steps]]
tool = "shell.exec"
args = { argv = ["touch", "stamp"] }
[[steps]]
tool = "shell.exec"
args = { argv = ["touch", "stamp"] }
[[steps]]
tool = "shell.exec"
args = { argv = ["touch", "other"] }
"#;
    let (run, a) = sb.to_review(&engine, twice).await?;
    let mut req = approve_once();
    req.scope = Scope::Run;
    let decided = engine.approve(&a.id, req).await?;
    let grant = decided.grant.ok_or_else(|| anyhow::anyhow!("no grant"))?;
    assert_eq!(
        (grant.matcher.as_str(), grant.scope.as_str()),
        ("exact", "run")
    );
    // Step 2 is the same action: the grant covers it. Step 3 is not: reviewed.
    assert!(waiting(&engine.drive(run, &Silent).await?));
    let b = pending(&engine, run).await?;
    assert_eq!(b.step_seq, 3);
    let live = engine.grants().await?;
    assert_eq!(live[0].uses, 1);
    assert!(reins_tests::kinds(&engine, run)
        .await?
        .iter()
        .any(|k| k == "grant.used"));

    // A pattern grant covers the approved command's prefix, never a command with substitutions.
    let mut pat = approve_once();
    pat.scope = Scope::Workspace;
    pat.pattern = Some("touch".into());
    let g2 = engine
        .approve(&b.id, pat)
        .await?
        .grant
        .ok_or_else(|| anyhow::anyhow!("no grant"))?;
    assert_eq!(g2.matcher, reins_core::api::Matcher::Prefix);
    engine.drive(run, &Silent).await?;
    assert!(sb.ws().join("other").exists());

    let sneaky = r#"
name = "sneaky"
goal = "g"
[[steps]]
tool = "shell.exec"
args = { command = "touch $(rm -rf docs)" }
"#;
    let run2 = sb.start(&engine, sneaky).await?;
    assert!(
        waiting(&engine.drive(run2, &Silent).await?),
        "the pattern grant does not cover it"
    );
    let c = pending(&engine, run2).await?;
    assert_eq!(c.risk, reins_core::api::Risk::High);
    let mut bad = approve_once();
    bad.scope = Scope::Always;
    bad.pattern = Some("touch".into());
    let refused = engine
        .approve(&c.id, bad)
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        refused
            .as_deref()
            .is_some_and(|e| e.contains("plain command")),
        "pattern grants are refused here: {refused:?}"
    );
    engine.reject(&c.id, "no", "user:test").await?;

    // Revoked: the same action is reviewed again.
    engine.revoke_grant(&g2.id).await?;
    let run3 = sb.start(&engine, "name = \"t\"\ngoal = \"g\"\n[[steps]]\ntool = \"shell.exec\"\nargs = { argv = [\"touch\", \"third\"] }\n").await?;
    assert!(waiting(&engine.drive(run3, &Silent).await?));
    Ok(())
}

#[tokio::test]
async fn a_worker_watching_pending_reviews_supersedes_a_stale_one_at_once() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let policy = sb.tmp.path().join("policy.toml");
    std::fs::write(&policy, "# the built-in defaults\n")?;
    let options = reins_core::api::Options {
        policy_file: Some(policy),
        database: sb.database.clone(),
        ..reins_core::api::Options::default()
    };
    let reins = reins_core::api::Reins::open(sb.data(), options).await?;
    let plan_file = sb.tmp.path().join("conf.toml");
    std::fs::write(&plan_file, EDIT_CONF)?;
    let run = reins.create_run(&plan_file, &sb.ws(), &Silent).await?;
    reins.drive(run, &Silent).await?;
    let before = reins
        .approvals(Some(ApprovalStatus::Pending), Some(run))
        .await?;
    assert_eq!(before.len(), 1);
    let mut watch = reins_core::api::ApprovalWatch::new()?;
    assert!(reins.watch_approvals(&mut watch).await?.is_empty());
    assert_eq!(watch.watched(), 1, "the folder of config/logrotate.conf");
    let conf = sb.ws().join("config/logrotate.conf");
    std::fs::write(
        &conf,
        std::fs::read_to_string(&conf)? + "# changed by hand\n",
    )?;
    let mut superseded = Vec::new();
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        superseded = reins.watch_approvals(&mut watch).await?;
        if !superseded.is_empty() {
            break;
        }
    }
    assert_eq!(superseded, vec![before[0].id.clone()]);
    let after = reins
        .approvals(Some(ApprovalStatus::Pending), Some(run))
        .await?;
    assert_eq!(after.len(), 1);
    assert_ne!(after[0].id, before[0].id);
    assert_ne!(after[0].pre_images, before[0].pre_images);
    reins.close().await;
    Ok(())
}

#[tokio::test]
async fn cancelling_a_run_takes_its_reviews_out_of_the_inbox() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let (run, a) = sb.to_review(&engine, WRITE_NOTE).await?;
    engine.cancel(run, Some("wrong workspace")).await?;
    let row = engine.approval(&a.id).await?;
    assert_eq!(row.status, ApprovalStatus::Expired);
    assert!(engine
        .approvals(Some(ApprovalStatus::Pending), None)
        .await?
        .is_empty());
    assert!(engine.approve(&a.id, approve_once()).await.is_err());
    assert!(!sb.ws().join("docs/note.md").exists());
    Ok(())
}
