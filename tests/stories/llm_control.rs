//! The LLM agent where people are in control: a reviewed write approved and another rejected, a
//! question answered, profile facts in the context (and out when memory is off, and gone when
//! deleted), the API key only in a header, a large output kept as an artifact.

use reins_core::api::{
    ApproveRequest, DriveOutcome, FactOrigin, NewFact, RememberedView, RunId, RunState, Scope,
    Secret, SecretStore as _, Silent,
};
use reins_tests::llm_setup::{files_containing, finished, setup, Setup};
use reins_tests::mock_llm;

#[tokio::test]
async fn an_approved_write_lands_and_a_rejection_reaches_the_model() -> anyhow::Result<()> {
    let write = r#"{"path":"docs/NOTE.md","content":"rotate daily\n"}"#;
    let s = setup(
        vec![
            mock_llm::calls("Leaving a note.", &[("w1", "fs_write", write)]),
            mock_llm::calls("Trying again.", &[("w2", "fs_write", write)]),
            mock_llm::text("The reviewer said no; stopping.", 50),
        ],
        true,
    )
    .await?;
    s.reins
        .memory_remember(NewFact {
            category: "workflow".into(),
            key: "notes".into(),
            value: "notes go in docs/".into(),
            confidence: None,
            origin: FactOrigin::User,
        })
        .await?;
    let run = s.start(&s.spec("leave a note")).await?;
    let outcome = s.settle(run, &Silent).await?;
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
        !s.sb.ws().join("docs/NOTE.md").exists(),
        "nothing before the review"
    );
    let pending = s
        .reins
        .approvals(Some(reins_core::api::ApprovalStatus::Pending), Some(run))
        .await?;
    assert_eq!(pending.len(), 1);
    assert!(pending[0].preview.contains("+rotate daily"));
    assert_eq!(
        pending[0].context.why.as_deref(),
        Some("Leaving a note."),
        "the card says why"
    );
    let approve = ApproveRequest {
        scope: Scope::Once,
        pattern: None,
        edited: None,
        note: None,
        expect_hash: None,
        by: "user:test".into(),
        leave_out: Vec::new(),
    };
    s.reins.approve(&pending[0].id, approve).await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(
        matches!(
            outcome,
            DriveOutcome::NeedsHuman {
                state: RunState::AwaitingApproval,
                ..
            }
        ),
        "the second write is reviewed too (once scope): {outcome:?}"
    );
    assert_eq!(s.sb.read("docs/NOTE.md")?, "rotate daily\n");
    std::fs::remove_file(s.sb.ws().join("docs/NOTE.md"))?;
    let pending = s
        .reins
        .approvals(Some(reins_core::api::ApprovalStatus::Pending), Some(run))
        .await?;
    // The card is built from the agent's working memory: the steps it did, not the model's JSON,
    // and the profile facts its context used.
    let card = &pending[0].context;
    assert_eq!(card.steps_done, 1, "{card:?}");
    assert_eq!(card.recent.len(), 1, "{card:?}");
    assert!(card.recent[0].starts_with("step 2 fs.write ok"), "{card:?}");
    assert_eq!(card.memory.len(), 1, "the fact's id only: {card:?}");
    assert_eq!(
        pending[0].facts[0].fact.as_deref(),
        Some("workflow.notes: notes go in docs/"),
        "resolved when shown"
    );
    assert_eq!(card.why.as_deref(), Some("Trying again."));
    s.reins
        .reject(&pending[0].id, "we keep notes in the wiki", "user:test")
        .await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(finished(&outcome, RunState::Succeeded), "{outcome:?}");
    assert!(
        !s.sb.ws().join("docs/NOTE.md").exists(),
        "the rejected write never ran"
    );
    // Deleting the fact leaves no trace of its text: not in the approvals' summaries, the manifests,
    // the audit log or anywhere else in the database file and its WAL.
    let fact_id = card_fact(&s, run).await?;
    s.reins.memory_delete(&fact_id).await?;
    assert!(s.reins.approvals(None, Some(run)).await?[0].facts[0]
        .fact
        .is_none());
    let seen_before_close = s.mock.seen();
    s.reins.close().await;
    let found = files_containing(&s.sb.tmp.path().join("data"), b"notes go in docs/")?;
    assert!(found.is_empty(), "the deleted fact is in {found:?}");
    let seen = seen_before_close;
    assert_eq!(seen.len(), 3);
    let told = mock_llm::tool_results(&seen[2]);
    assert!(
        told.iter()
            .any(|(id, t)| id == "w2" && t.contains("we keep notes in the wiki")),
        "the model heard the reason: {told:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_question_waits_for_the_answer_and_the_model_gets_it() -> anyhow::Result<()> {
    let s = setup(
        vec![
            mock_llm::calls(
                "",
                &[("q1", "ask_user", r#"{"question":"Keep 7 or 14 days?"}"#)],
            ),
            mock_llm::text("Keeping 14 days.", 50),
        ],
        false,
    )
    .await?;
    let run = s.start(&s.spec("set retention")).await?;
    let outcome = s.settle(run, &Silent).await?;
    let DriveOutcome::NeedsHuman { state, reason } = outcome else {
        anyhow::bail!("{outcome:?}")
    };
    assert_eq!(state, RunState::AwaitingInput);
    assert!(reason.contains("Keep 7 or 14 days?"), "{reason}");
    assert_eq!(
        s.reins.question(run).await?.map(|q| q.1),
        Some("Keep 7 or 14 days?".to_owned())
    );
    // Not driven while it waits.
    assert!(matches!(
        s.reins.drive(run, &Silent).await?,
        DriveOutcome::Skipped { .. }
    ));
    // Paused and resumed before anyone answered: it goes back to waiting, asking nothing again.
    s.reins.pause(run).await?;
    s.reins
        .resume(run, reins_core::api::ResumeMode::Continue)
        .await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(
        matches!(
            &outcome,
            DriveOutcome::NeedsHuman {
                state: RunState::AwaitingInput,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(s.mock.count(), 1, "the question was not asked again");
    assert!(
        s.reins.answer(run, "  ").await.is_err(),
        "an empty answer is refused"
    );
    s.reins.answer(run, "14 days").await?;
    assert!(s.reins.answer(run, "again").await.is_err(), "answered once");
    let outcome = s.settle(run, &Silent).await?;
    assert!(finished(&outcome, RunState::Succeeded), "{outcome:?}");
    let told = mock_llm::tool_results(&s.mock.seen()[1]);
    assert_eq!(told, vec![("q1".to_owned(), "14 days".to_owned())]);
    let kinds = reins_tests::kinds(&s.reins, run).await?;
    for k in ["question.asked", "question.answered", "model.called"] {
        assert!(kinds.iter().any(|x| x == k), "{k} in {kinds:?}");
    }
    Ok(())
}

#[tokio::test]
async fn profile_facts_go_in_as_data_and_the_off_switch_keeps_them_out() -> anyhow::Result<()> {
    let s = setup(
        vec![mock_llm::text("ok", 50), mock_llm::text("ok", 50)],
        false,
    )
    .await?;
    let fact = match s
        .reins
        .memory_remember(NewFact {
            category: "language".into(),
            key: "reply_language".into(),
            value: "answer in French".into(),
            confidence: None,
            origin: FactOrigin::User,
        })
        .await?
    {
        RememberedView::Stored { fact } => fact,
        other => anyhow::bail!("{other:?}"),
    };
    let run = s.start(&s.spec("say hi")).await?;
    s.settle(run, &Silent).await?;
    let system = s.mock.seen()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(system.contains("answer in French"), "{system}");
    let ctx = s.reins.context(run).await?;
    assert_eq!(ctx[0].facts.len(), 1);
    assert_eq!(ctx[0].facts[0].id, fact.id);
    assert_eq!(
        ctx[0].facts[0].fact.as_deref(),
        Some("language.reply_language: answer in French")
    );

    s.reins.memory_configure(Some(false), None, None).await?;
    let run = s.start(&s.spec("say hi again")).await?;
    s.settle(run, &Silent).await?;
    let body = s.mock.seen()[1].body.to_string();
    assert!(!body.contains("answer in French"), "memory is off: {body}");
    assert!(s.reins.context(run).await?[0].facts.is_empty());
    Ok(())
}

#[tokio::test]
async fn the_api_key_is_sent_only_in_the_header_and_is_on_no_disk() -> anyhow::Result<()> {
    let key = "sk-test-Zq8vN3kT7yR2wP5mL9xC4bH6jD1fG0aE";
    let s = setup(vec![mock_llm::text("ok", 50)], false).await?;
    let mut spec = s.spec("use the key");
    spec.key = Some("mock".into());
    let err = s
        .start(&spec)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("reins keys set mock"),
        "a missing key is said up front: {err}"
    );
    s.keys.set("mock", &Secret::new(key))?;
    // A workspace file naming another server or key is never read.
    std::fs::write(
        s.sb.ws().join(".env"),
        "OPENAI_BASE_URL=http://127.0.0.1:9/v1\nOPENAI_API_KEY=sk-from-the-workspace-file-000000\n",
    )?;
    let run = s.start(&spec).await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(finished(&outcome, RunState::Succeeded), "{outcome:?}");
    let seen = s.mock.seen();
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {key}").as_str())
    );
    assert!(!seen[0].body.to_string().contains(key), "never in the body");
    s.reins.close().await;
    let found = files_containing(&s.sb.tmp.path().join("data"), key.as_bytes())?;
    assert!(found.is_empty(), "the key is in {found:?}");
    Ok(())
}

#[tokio::test]
async fn a_large_tool_output_reaches_the_model_as_an_excerpt_of_a_stored_artifact(
) -> anyhow::Result<()> {
    let s = setup(
        vec![
            mock_llm::calls("", &[("big", "fs_read", r#"{"path":"logs/big.log"}"#)]),
            mock_llm::text("Read it.", 50),
        ],
        false,
    )
    .await?;
    let log: String = (0..2000)
        .map(|i| format!("line {i:05} disk usage high\n"))
        .collect();
    std::fs::write(s.sb.ws().join("logs/big.log"), &log)?;
    let run = s.start(&s.spec("read the big log")).await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(finished(&outcome, RunState::Succeeded), "{outcome:?}");
    let told = mock_llm::tool_results(&s.mock.seen()[1]);
    let text = &told[0].1;
    let digest = reins_core::api::Digest::of(log.as_bytes());
    assert!(
        text.len() < 9 * 1024,
        "an excerpt, not {} bytes",
        text.len()
    );
    assert!(text.starts_with("line 00000"), "the head: {}", &text[..40]);
    assert!(
        text.trim_end().ends_with("line 01999 disk usage high"),
        "the tail"
    );
    assert!(
        text.contains(&format!("artifact {digest} in the blob store")),
        "the reference: {text}"
    );
    assert_eq!(
        s.reins.blob(&digest).await?.as_deref(),
        Some(log.as_bytes()),
        "the whole output is stored, verified"
    );
    Ok(())
}
/// Red team N8: the blob store is not sealed, so an output holding a secret is not put there; the
/// journal keeps it, sealed, and the model is told where.
#[tokio::test]
async fn a_large_output_holding_a_secret_is_kept_only_sealed() -> anyhow::Result<()> {
    let s = setup(
        vec![
            mock_llm::calls("", &[("big", "fs_read", r#"{"path":"logs/big.log"}"#)]),
            mock_llm::text("Read it.", 50),
        ],
        false,
    )
    .await?;
    let key = "sk-proj-Q7bX2mR9tL4wZ8kP1nV6cJ3hF5dS0aEyGuTiOpLk";
    let mut log: String = (0..600).map(|i| format!("line {i:05} ok\n")).collect();
    log.push_str(&format!("OPENAI_API_KEY={key}\n"));
    std::fs::write(s.sb.ws().join("logs/big.log"), &log)?;
    let run = s.start(&s.spec("read the big log")).await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(finished(&outcome, RunState::Succeeded), "{outcome:?}");
    let told = mock_llm::tool_results(&s.mock.seen()[1]);
    let text = &told[0].1;
    assert!(!text.contains("in the blob store"), "{text}");
    assert!(text.contains("`reins show RUN --step"), "{text}");
    s.reins.close().await;
    let found = files_containing(&s.sb.tmp.path().join("data/blobs"), key.as_bytes())?;
    assert!(found.is_empty(), "the key is in {found:?}");
    Ok(())
}

async fn card_fact(s: &Setup, run: RunId) -> anyhow::Result<String> {
    let all = s.reins.approvals(None, Some(run)).await?;
    all.first()
        .and_then(|a| a.context.memory.first().cloned())
        .ok_or_else(|| anyhow::anyhow!("no fact on the card"))
}
