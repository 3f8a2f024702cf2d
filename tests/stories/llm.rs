//! The LLM agent against a scripted OpenAI-compatible server: streaming, split and parallel tool
//! calls, malformed and unknown calls, transient and permanent server errors, a stalled stream.

use std::sync::Mutex;

use reins_core::api::RunState;
use reins_core::api::{DriveOutcome, Observer, Progress, Silent};
use reins_tests::llm_setup::{finished, setup};
use reins_tests::mock_llm::{self, Reply};

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
        (steps[0].kind, steps[0].status),
        (
            reins_core::api::StepKind::ModelCall,
            reins_core::api::StepStatus::Done
        )
    );
    let usage = s.reins.usage(run).await?;
    assert_eq!(
        (usage.model_calls, usage.tokens_in, usage.tokens_out),
        (1, 120, 30)
    );
    let ctx = s.reins.context(run).await?;
    assert_eq!(ctx.len(), 1);
    let entries = &ctx[0].manifest.entries;
    for id in ["system", "policy", "goal", "working-memory"] {
        assert!(
            entries
                .iter()
                .any(|e| e.id == id && e.fate == reins_core::api::Fate::Included),
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
        .map(|st| (st.tool, st.status.to_string()))
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
    // The run reads as the model's words and its calls, each linked to the step that ran it.
    let detail = s.reins.run_detail(run).await?;
    let turns: Vec<_> = detail
        .steps
        .iter()
        .filter_map(|st| st.model_turn.clone())
        .collect();
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[0].text, "Reading the config and the log.");
    let linked: Vec<(&str, Option<i64>)> = turns[0]
        .calls
        .iter()
        .map(|c| (c.name.as_str(), c.step))
        .collect();
    assert_eq!(linked, [("fs_read", Some(2)), ("fs_read", Some(3))]);
    assert_eq!(turns[1].calls[0].step, Some(5));
    assert_eq!(turns[2].text, "Rotation is daily now.");
    assert!(turns[2].calls.is_empty());
    assert!(
        detail.steps[1].model_turn.is_none(),
        "a read is no model turn"
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
    let t0 = reins_core::api::now_ms();
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
    let retries = s.reins.run_detail(run).await?.retries;
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
