//! The LLM agent against a scripted OpenAI-compatible server: streaming, split and parallel tool
//! calls, malformed and unknown calls, transient and permanent server errors, a stalled stream,
//! reviews, questions, profile facts in the context, and API keys that never reach the disk.

use std::sync::{Arc, Mutex};

use reins_core::agent::llm::Spec;
use reins_core::api::{Options, Reins};
use reins_core::engine::{ApproveRequest, DriveOutcome, Observer, Progress, Silent};
use reins_core::failure::RetryBudget;
use reins_core::ids::RunId;
use reins_core::keys::{MemoryStore, Secret, SecretStore as _};
use reins_core::provider::Settings;
use reins_core::run::RunState;
use reins_core::store::{audit, steps};
use reins_tests::mock_llm::{self, MockLlm, Reply};
use reins_tests::Sandbox;

struct Setup {
    sb: Sandbox,
    reins: Reins,
    mock: MockLlm,
    keys: Arc<MemoryStore>,
}

/// `review`: the built-in policy (writes are reviewed); otherwise file changes run at once.
async fn setup(script: Vec<Reply>, review: bool) -> anyhow::Result<Setup> {
    let sb = Sandbox::new()?;
    let policy_file = if review {
        let p = sb.tmp.path().join("policy.toml");
        std::fs::write(&p, "# the built-in defaults\n")?;
        Some(p)
    } else {
        reins_tests::options().policy_file
    };
    let options = Options {
        policy_file,
        retry: RetryBudget {
            max_retries: 3,
            window_ms: 60_000,
            base_delay_ms: 10,
            max_delay_ms: 50,
        },
        ..Options::default()
    };
    let keys = Arc::new(MemoryStore::default());
    let reins = Reins::open(sb.data(), options)
        .await?
        .with_secrets(keys.clone());
    let mock = MockLlm::start(script)?;
    Ok(Setup {
        sb,
        reins,
        mock,
        keys,
    })
}

impl Setup {
    fn spec(&self, goal: &str) -> Spec {
        Spec {
            name: "llm test".into(),
            goal: goal.into(),
            settings: Settings {
                base_url: self.mock.base_url(),
                model: "mock-model".into(),
                context_window: 16_000,
                max_output: 1_000,
                timeout_s: 2,
                ..Settings::default()
            },
            max_turns: 10,
        }
    }

    async fn start(&self, spec: &Spec) -> anyhow::Result<RunId> {
        Ok(self
            .reins
            .create_llm_run(spec, &self.sb.ws(), &Silent)
            .await?)
    }

    /// Drives until the run finishes or needs a human, waiting out retry backoffs.
    async fn settle(&self, run: RunId, obs: &dyn Observer) -> anyhow::Result<DriveOutcome> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            match self.reins.drive(run, obs).await? {
                DriveOutcome::Retrying { at, .. } => {
                    let wait = (at - reins_core::clock::now_ms()).max(0).unsigned_abs();
                    tokio::time::sleep(std::time::Duration::from_millis(wait + 5)).await;
                }
                DriveOutcome::Skipped {
                    state: RunState::Queued,
                    ..
                } => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
                other => return Ok(other),
            }
        }
        anyhow::bail!("run {run} did not settle")
    }

    async fn steps(&self, run: RunId) -> anyhow::Result<Vec<steps::StepRow>> {
        Ok(steps::list(self.reins.store().pool(), run).await?)
    }
}

fn finished(o: &DriveOutcome, want: RunState) -> bool {
    matches!(o, DriveOutcome::Finished { state, .. } if *state == want)
}

#[derive(Default)]
struct Streamed(Mutex<String>);

impl Observer for Streamed {
    fn on(&self, p: &Progress) {
        if let Progress::Text { text } = p {
            if let Ok(mut s) = self.0.lock() {
                s.push_str(text);
            }
        }
    }
}

#[tokio::test]
async fn streamed_text_is_the_final_answer_with_usage_and_a_manifest() -> anyhow::Result<()> {
    let s = setup(
        vec![mock_llm::text("Nothing to change: the config is fine.", 4)],
        false,
    )
    .await?;
    let run = s.start(&s.spec("check the config")).await?;
    let streamed = Streamed::default();
    let outcome = s.settle(run, &streamed).await?;
    assert!(
        matches!(&outcome, DriveOutcome::Finished { state: RunState::Succeeded, summary } if summary == "Nothing to change: the config is fine."),
        "{outcome:?}"
    );
    assert_eq!(
        streamed.0.lock().map(|s| s.clone()).unwrap_or_default(),
        "Nothing to change: the config is fine.",
        "every piece reached the observer as it came"
    );
    let steps = s.steps(run).await?;
    assert_eq!(steps.len(), 1);
    assert_eq!(
        (steps[0].kind.as_str(), steps[0].status.as_str()),
        ("model_call", "done")
    );
    let usage = s.reins.usage(run).await?;
    assert_eq!(
        (usage.model_calls, usage.tokens_in, usage.tokens_out),
        (1, 120, 30)
    );
    let ctx = s.reins.context(run).await?;
    assert_eq!(ctx.len(), 1);
    let entries = ctx[0].manifest["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for id in ["system", "policy", "goal", "working-memory"] {
        assert!(
            entries
                .iter()
                .any(|e| e["id"] == id && e["fate"] == "included"),
            "{id} in {entries:?}"
        );
    }
    // The request: tools from the schemas, one leading system message, the goal.
    let seen = s.mock.seen();
    let body = &seen[0].body;
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["stream"], true);
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    for t in [
        "fs_read",
        "fs_write",
        "shell_exec",
        "http_fetch",
        "ask_user",
    ] {
        assert!(tools.contains(&t), "{t} in {tools:?}");
    }
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["required"],
        serde_json::json!(["path"])
    );
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages.iter().filter(|m| m["role"] == "system").count(), 1);
    assert_eq!(messages[1]["content"], "Goal: check the config");
    Ok(())
}

#[tokio::test]
async fn split_and_parallel_tool_calls_run_in_order_and_answer_their_ids() -> anyhow::Result<()> {
    let s = setup(
        vec![
            mock_llm::calls(
                "Reading the config and the log.",
                &[
                    ("call_a", "fs_read", r#"{"path":"config/logrotate.conf"}"#),
                    ("call_b", "fs_read", r#"{"path":"logs/app.log"}"#),
                ],
            ),
            mock_llm::calls(
                "Fixing it.",
                &[(
                    "call_c",
                    "fs_write",
                    r#"{"path":"config/logrotate.conf","content":"daily\nrotate 7\n"}"#,
                )],
            ),
            mock_llm::text("Rotation is daily now.", 50),
        ],
        false,
    )
    .await?;
    let run = s.start(&s.spec("fix log rotation")).await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(finished(&outcome, RunState::Succeeded), "{outcome:?}");
    assert_eq!(s.sb.read("config/logrotate.conf")?, "daily\nrotate 7\n");
    let tools: Vec<(String, String)> = s
        .steps(run)
        .await?
        .into_iter()
        .map(|st| (st.tool, st.status))
        .collect();
    let want = [
        ("model", "done"),
        ("fs.read", "done"),
        ("fs.read", "done"),
        ("model", "done"),
        ("fs.write", "done"),
        ("model", "done"),
    ];
    assert_eq!(
        tools,
        want.map(|(a, b)| (a.to_owned(), b.to_owned())).to_vec()
    );
    let seen = s.mock.seen();
    assert_eq!(seen.len(), 3);
    let results = mock_llm::tool_results(&seen[1]);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "call_a");
    assert!(
        results[0].1.contains("rotate"),
        "the config's text: {:?}",
        results[0].1
    );
    assert_eq!(results[1].0, "call_b");
    // The assistant message carries both calls with the arguments put back together.
    let assistant = seen[1].body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "assistant")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        assistant["tool_calls"][1]["function"]["arguments"],
        r#"{"path":"logs/app.log"}"#
    );
    // The steps ran with the model's words as their reason.
    let st = s.steps(run).await?;
    assert_eq!(
        st[1].why.as_deref(),
        Some("Reading the config and the log.")
    );
    Ok(())
}

#[tokio::test]
async fn malformed_and_unknown_calls_go_back_to_the_model_then_fail_after_a_bound(
) -> anyhow::Result<()> {
    let s = setup(
        vec![
            mock_llm::calls("", &[("c1", "fs_read", r#"{"path": "config/"#)]),
            mock_llm::calls("", &[("c2", "delete_everything", "{}")]),
            mock_llm::text("Gave up nicely.", 50),
        ],
        false,
    )
    .await?;
    let run = s.start(&s.spec("read something")).await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(finished(&outcome, RunState::Succeeded), "{outcome:?}");
    let seen = s.mock.seen();
    let told = mock_llm::tool_results(&seen[1]);
    assert!(told[0].1.contains("not a JSON object"), "{told:?}");
    let told = mock_llm::tool_results(&seen[2]);
    assert!(
        told.iter()
            .any(|(_, t)| t.contains("no tool named \"delete_everything\"")),
        "{told:?}"
    );

    // Three bad replies in a row: the run fails with the reason.
    let s = setup(
        (0..3)
            .map(|i| {
                mock_llm::calls(
                    "",
                    &[("x", "fs_write", if i == 1 { "[1]" } else { "{oops" })],
                )
            })
            .collect(),
        false,
    )
    .await?;
    let run = s.start(&s.spec("write something")).await?;
    let outcome = s.settle(run, &Silent).await?;
    let DriveOutcome::Finished { state, summary } = outcome else {
        anyhow::bail!("must finish: {outcome:?}")
    };
    assert_eq!(state, RunState::Failed);
    assert!(
        summary.contains("malformed or unknown tool calls 3 times"),
        "{summary}"
    );
    assert_eq!(s.mock.count(), 3, "no fourth request");
    Ok(())
}

#[tokio::test]
async fn transient_errors_are_retried_under_the_budget_and_retry_after_is_honoured(
) -> anyhow::Result<()> {
    let s = setup(
        vec![
            mock_llm::status(429, Some("1")),
            mock_llm::status(500, None),
            Reply::Stall {
                chunks: vec![r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#.into()],
            },
            mock_llm::text("Done after three failures.", 50),
        ],
        false,
    )
    .await?;
    let run = s.start(&s.spec("be patient")).await?;
    let t0 = reins_core::clock::now_ms();
    let first = s.reins.drive(run, &Silent).await?;
    let DriveOutcome::Retrying { at, reason } = first else {
        anyhow::bail!("429 is transient: {first:?}")
    };
    assert!(
        at - t0 >= 1000,
        "Retry-After: 1 s was honoured ({} ms)",
        at - t0
    );
    assert!(reason.contains("429"), "{reason}");
    let outcome = s.settle(run, &Silent).await?;
    assert!(finished(&outcome, RunState::Succeeded), "{outcome:?}");
    assert_eq!(s.mock.count(), 4);
    let retries = reins_core::store::retries::list(s.reins.store().pool(), run).await?;
    let errors: Vec<&str> = retries.iter().map(|r| r.error.as_str()).collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[1].contains("500"), "{errors:?}");
    assert!(
        errors[2].contains("silent for 2 s"),
        "the stalled stream timed out: {errors:?}"
    );

    // The budget runs out: the run waits for a person instead of retrying forever.
    let s = setup((0..5).map(|_| mock_llm::status(503, None)).collect(), false).await?;
    let run = s.start(&s.spec("never works")).await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(
        matches!(&outcome, DriveOutcome::NeedsHuman { state: RunState::Suspended, reason } if reason.contains("retry budget exhausted")),
        "{outcome:?}"
    );
    assert_eq!(s.mock.count(), 4, "the first try and three retries");
    Ok(())
}

#[tokio::test]
async fn a_permanent_error_suspends_with_the_servers_words_and_a_hint() -> anyhow::Result<()> {
    let s = setup(vec![mock_llm::status(401, None)], false).await?;
    let run = s.start(&s.spec("anything")).await?;
    let outcome = s.settle(run, &Silent).await?;
    let DriveOutcome::NeedsHuman { state, reason } = outcome else {
        anyhow::bail!("{outcome:?}")
    };
    assert_eq!(state, RunState::Suspended);
    assert!(
        reason.contains("401") && reason.contains("mock says 401"),
        "{reason}"
    );
    assert!(reason.contains("reins keys"), "{reason}");
    assert_eq!(s.mock.count(), 1, "a 4xx is never retried");
    Ok(())
}

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
        .memory_remember(reins_core::memory::NewFact {
            category: "workflow".into(),
            key: "notes".into(),
            value: "notes go in docs/".into(),
            confidence: None,
            origin: reins_core::memory::Origin::User,
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
    let pending = s.reins.approvals(Some("pending"), Some(run)).await?;
    assert_eq!(pending.len(), 1);
    assert!(pending[0].row.preview.contains("+rotate daily"));
    assert_eq!(
        pending[0].context_summary.why.as_deref(),
        Some("Leaving a note."),
        "the card says why"
    );
    let approve = ApproveRequest {
        scope: reins_core::approval::Scope::Once,
        pattern: None,
        edited: None,
        note: None,
        expect_hash: None,
        by: "user:test".into(),
    };
    s.reins.approve(&pending[0].row.id, approve).await?;
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
    let pending = s.reins.approvals(Some("pending"), Some(run)).await?;
    // The card is built from the agent's working memory: the steps it did, not the model's JSON,
    // and the profile facts its context used.
    let card = &pending[0].context_summary;
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
        .reject(&pending[0].row.id, "we keep notes in the wiki", "user:test")
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
    for file in walk(&s.sb.tmp.path().join("data"))? {
        let bytes = std::fs::read(&file)?;
        let needle = b"notes go in docs/";
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "the deleted fact is in {}",
            file.display()
        );
    }
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
    let kinds: Vec<String> = audit::for_run(s.reins.store().pool(), run)
        .await?
        .into_iter()
        .map(|e| e.kind)
        .collect();
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
        .memory_remember(reins_core::memory::NewFact {
            category: "language".into(),
            key: "reply_language".into(),
            value: "answer in French".into(),
            confidence: None,
            origin: reins_core::memory::Origin::User,
        })
        .await?
    {
        reins_core::memory::Remembered::Stored { fact } => fact,
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
    spec.settings.key = Some("mock".into());
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
    for entry in walk(&s.sb.tmp.path().join("data"))? {
        let bytes = std::fs::read(&entry)?;
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "the key is in {}",
            entry.display()
        );
    }
    Ok(())
}

async fn card_fact(s: &Setup, run: RunId) -> anyhow::Result<String> {
    let all = s.reins.approvals(None, Some(run)).await?;
    all.first()
        .and_then(|a| a.context_summary.memory.first().cloned())
        .ok_or_else(|| anyhow::anyhow!("no fact on the card"))
}

fn walk(dir: &std::path::Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let p = entry?.path();
        if p.is_dir() {
            out.extend(walk(&p)?);
        } else {
            out.push(p);
        }
    }
    Ok(out)
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
    let digest = reins_core::digest::Digest::of(log.as_bytes());
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
    let blobs = reins_core::blob::BlobStore::open(&s.sb.data().blobs())?;
    assert_eq!(
        blobs.get(&digest)?,
        log.as_bytes(),
        "the whole output is stored, verified"
    );
    Ok(())
}
