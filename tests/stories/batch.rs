//! Several cards approved at once are bound to what the person saw: exactly that set, each by the
//! action hash it showed. If one of them changed on disk, was decided elsewhere or shows another
//! action meanwhile, none is approved, and the answer names the one that moved. High-risk cards
//! are never part of a batch.

use reins_core::api::{ApprovalStatus, Error, Reins, Risk, RunId, Shown, Silent};
use reins_tests::review::{pending, succeeded};
use reins_tests::{events, kinds, Sandbox};

const WRITE_NOTE: &str = r#"
name = "note"
goal = "leave a note"
[[steps]]
tool = "fs.write"
args = { path = "docs/note.md", content = "rotate daily\n" }
"#;

const EDIT_CONF: &str = r#"
name = "conf"
goal = "fix rotation"
[[steps]]
tool = "fs.edit"
args = { path = "config/logrotate.conf", old = "    rotate = never\n", new = "    rotate 7\n" }
"#;

const SNEAKY: &str = r#"
name = "sneaky"
goal = "g"
[[steps]]
tool = "shell.exec"
args = { command = "touch $(rm -rf docs)" }
"#;

/// Two runs waiting on a card each, and the cards as the inbox shows them.
async fn two_cards(sb: &Sandbox, engine: &Reins) -> anyhow::Result<[(RunId, Shown); 2]> {
    let (a_run, a) = sb.to_review(engine, WRITE_NOTE).await?;
    let (b_run, b) = sb.to_review(engine, EDIT_CONF).await?;
    assert_ne!(a.risk, Risk::High);
    assert_ne!(b.risk, Risk::High);
    let shown = |v: &reins_core::api::ApprovalView| Shown {
        id: v.id.clone(),
        action_hash: v.action_hash.clone(),
    };
    Ok([(a_run, shown(&a)), (b_run, shown(&b))])
}

async fn status(engine: &Reins, id: &str) -> anyhow::Result<ApprovalStatus> {
    Ok(engine.approval(id).await?.status)
}

fn conflict(e: &Error) -> &str {
    match e {
        Error::Conflict(why) => why,
        _ => "",
    }
}

#[tokio::test]
async fn a_batch_approves_exactly_the_cards_shown_and_each_is_carried_out() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let [(a_run, a), (b_run, b)] = two_cards(&sb, &engine).await?;
    let decided = engine
        .approve_batch(&[a.clone(), b.clone()], "ada", Some("both fine"))
        .await?;
    assert_eq!(decided.len(), 2);
    assert_eq!(status(&engine, &a.id).await?, ApprovalStatus::Approved);
    assert_eq!(status(&engine, &b.id).await?, ApprovalStatus::Approved);
    assert!(succeeded(&engine.drive(a_run, &Silent).await?));
    assert!(succeeded(&engine.drive(b_run, &Silent).await?));
    assert_eq!(sb.read("docs/note.md")?, "rotate daily\n");
    assert!(sb.read("config/logrotate.conf")?.contains("    rotate 7\n"));
    // The audit log says each was one of a batch, with the person's note.
    let approved = events(&engine, Some(a_run))
        .await?
        .iter()
        .find(|e| e.kind == "approval.approved")
        .map(|e| e.payload.to_string())
        .unwrap_or_default();
    assert!(
        approved.contains("both fine (one of 2 approved together)"),
        "{approved}"
    );
    Ok(())
}

#[tokio::test]
async fn a_batch_where_one_card_moved_approves_none_and_names_it() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;

    // One card's file changed on disk after it was shown.
    let [(a_run, a), (b_run, b)] = two_cards(&sb, &engine).await?;
    let conf = sb.ws().join("config/logrotate.conf");
    std::fs::write(&conf, sb.read("config/logrotate.conf")? + "# hand edit\n")?;
    let e = engine
        .approve_batch(&[a.clone(), b.clone()], "ada", None)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a moved card let the batch through"))?;
    let why = conflict(&e);
    assert!(why.contains("none of the 2 cards was approved"), "{e}");
    assert!(
        why.contains(&b.id) && why.contains("changed on disk"),
        "{e}"
    );
    assert!(
        !why.contains(&format!("{}:", a.id)),
        "only the one that moved: {e}"
    );
    assert_eq!(
        status(&engine, &a.id).await?,
        ApprovalStatus::Pending,
        "not approved"
    );
    assert!(!kinds(&engine, a_run)
        .await?
        .contains(&"approval.approved".to_owned()));
    // The changed one is reviewed again; the other still waits as shown.
    assert_ne!(pending(&engine, b_run).await?.id, b.id);
    assert_eq!(pending(&engine, a_run).await?.id, a.id);

    // One card decided elsewhere meanwhile.
    let [(c_run, c), (_, d)] = two_cards(&sb, &engine).await?;
    engine.reject(&d.id, "not this one", "bob").await?;
    let e = engine
        .approve_batch(&[c.clone(), d.clone()], "ada", None)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a decided card let the batch through"))?;
    assert!(
        conflict(&e).contains(&d.id) && conflict(&e).contains("rejected"),
        "{e}"
    );
    assert_eq!(status(&engine, &c.id).await?, ApprovalStatus::Pending);
    assert!(!kinds(&engine, c_run)
        .await?
        .contains(&"approval.approved".to_owned()));

    // One card shown with another action's hash.
    let mut wrong = c.clone();
    wrong.action_hash = "0".repeat(64);
    let e = engine
        .approve_batch(&[wrong, a.clone()], "ada", None)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a hash not shown let the batch through"))?;
    assert!(conflict(&e).contains(&c.id), "{e}");
    assert_eq!(status(&engine, &a.id).await?, ApprovalStatus::Pending);
    assert_eq!(status(&engine, &c.id).await?, ApprovalStatus::Pending);
    Ok(())
}

#[tokio::test]
async fn high_risk_cards_and_unbound_cards_are_never_batched() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let [(_, a), _] = two_cards(&sb, &engine).await?;
    let (_, high) = sb.to_review(&engine, SNEAKY).await?;
    assert_eq!(high.risk, Risk::High);
    let high = Shown {
        id: high.id.clone(),
        action_hash: high.action_hash.clone(),
    };
    let e = engine
        .approve_batch(&[a.clone(), high.clone()], "ada", None)
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("a high-risk card was batched"))?;
    assert!(e.to_string().contains("one at a time"), "{e}");
    let mut unbound = a.clone();
    unbound.action_hash.clear();
    assert!(engine.approve_batch(&[unbound], "ada", None).await.is_err());
    assert!(engine.approve_batch(&[], "ada", None).await.is_err());
    assert!(engine
        .approve_batch(&[a.clone(), a.clone()], "ada", None)
        .await
        .is_err_and(|e| e.to_string().contains("twice")));
    assert_eq!(status(&engine, &a.id).await?, ApprovalStatus::Pending);
    assert_eq!(status(&engine, &high.id).await?, ApprovalStatus::Pending);
    Ok(())
}

/// Three writes the model asked for in one turn: rejecting the first with its siblings refuses all
/// three with one decision. No card is shown for the other two, no file is written, and the
/// model's next request answers each call with the reason.
#[tokio::test]
async fn rejecting_a_call_with_its_siblings_refuses_the_whole_turn_at_once() -> anyhow::Result<()> {
    use reins_tests::llm_setup::{finished, setup};
    use reins_tests::mock_llm;
    let s = setup(
        vec![
            mock_llm::calls(
                "Writing three notes.",
                &[
                    ("c1", "fs_write", r#"{"path":"notes/a.md","content":"a\n"}"#),
                    ("c2", "fs_write", r#"{"path":"notes/b.md","content":"b\n"}"#),
                    ("c3", "fs_write", r#"{"path":"notes/c.md","content":"c\n"}"#),
                ],
            ),
            mock_llm::text("Understood: nothing written.", 50),
        ],
        true,
    )
    .await?;
    let run = s.start(&s.spec("write three notes")).await?;
    assert!(matches!(
        s.settle(run, &Silent).await?,
        reins_core::api::DriveOutcome::NeedsHuman { .. }
    ));
    let card = pending(&s.reins, run).await?;
    assert_eq!(card.context.pending, ["fs_write", "fs_write"], "{card:?}");
    let decided = s
        .reins
        .reject_with(&card.id, "no notes in this repository", "user:test", true)
        .await?;
    assert_eq!(decided.approval.siblings_rejected, 2);
    let outcome = s.settle(run, &Silent).await?;
    assert!(
        finished(&outcome, reins_core::api::RunState::Succeeded),
        "{outcome:?}"
    );
    assert_eq!(
        s.reins.approvals(None, Some(run)).await?.len(),
        1,
        "no card for the calls rejected with it"
    );
    for f in ["a", "b", "c"] {
        assert!(!s.sb.ws().join(format!("notes/{f}.md")).exists());
    }
    let seen = s.mock.seen();
    assert_eq!(seen.len(), 2);
    let told = reins_tests::mock_llm::tool_results(&seen[1]);
    let mut ids: Vec<&str> = told.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["c1", "c2", "c3"], "{told:?}");
    assert!(
        told.iter()
            .all(|(_, said)| said.contains("no notes in this repository")),
        "{told:?}"
    );
    let rejected = kinds(&s.reins, run).await?;
    assert_eq!(
        rejected
            .iter()
            .filter(|k| *k == "approval.rejected")
            .count(),
        1
    );
    Ok(())
}

#[tokio::test]
async fn a_card_with_nothing_queued_after_it_has_no_siblings_to_reject() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let (run, card) = sb.to_review(&engine, WRITE_NOTE).await?;
    assert!(card.context.pending.is_empty());
    let refused = engine
        .reject_with(&card.id, "not now", "user:test", true)
        .await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("no calls are queued")),
        "{refused:?}"
    );
    assert_eq!(pending(&engine, run).await?.id, card.id, "still pending");
    Ok(())
}
