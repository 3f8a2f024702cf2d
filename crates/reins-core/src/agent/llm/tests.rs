use super::*;
use crate::provider::ToolCall as WireCall;
use super::excerpt::excerpt;

fn spec() -> Spec {
    Spec {
        name: "t".into(),
        goal: "fix the config".into(),
        settings: provider::Settings::default(),
        max_turns: 5,
        mcp: Vec::new(),
    }
}

fn reply(text: &str, calls: &[(&str, &str, &str)]) -> Completion {
    Completion {
        text: text.into(),
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| WireCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: (*args).into(),
            })
            .collect(),
        finish_reason: Some("tool_calls".into()),
        usage: None,
    }
}

#[tokio::test]
async fn thinks_then_runs_each_call_then_finishes() -> anyhow::Result<()> {
    let mut a = LlmAgent::new(spec());
    let Move::Think(input) = a.next(&crate::progress::Silent).await? else {
        anyhow::bail!("first move must ask the model")
    };
    assert!(input
        .tools
        .iter()
        .any(|t| t["function"]["name"] == "fs_write"));
    assert!(input
        .tools
        .iter()
        .any(|t| t["function"]["name"] == "ask_user"));
    a.replied(&reply(
        "reading both",
        &[
            ("c1", "fs_read", r#"{"path":"a"}"#),
            ("c2", "fs_read", r#"{"path":"b"}"#),
        ],
    ));
    for (n, path) in [(1, "a"), (2, "b")] {
        let Move::Call { call, why } = a.next(&crate::progress::Silent).await? else {
            anyhow::bail!("a call")
        };
        assert_eq!(
            (call.tool.as_str(), call.args["path"].as_str()),
            ("fs.read", Some(path))
        );
        assert_eq!(why.as_deref(), Some("reading both"));
        a.observe(&Observation {
            seq: n,
            tool: "fs.read".into(),
            ok: true,
            output: format!("content of {path}"),
            ran: None,
            artifact: None,
        });
    }
    let Move::Think(input) = a.next(&crate::progress::Silent).await? else {
        anyhow::bail!("back to the model")
    };
    assert_eq!(
        a.working_memory().and_then(|w| w.intent),
        Some("reading both".into())
    );
    let request = input
        .parts
        .iter()
        .find(|p| p.kind == crate::context::Kind::Request)
        .ok_or_else(|| anyhow::anyhow!("no request part"))?;
    let ids: Vec<_> = request
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    assert_eq!(
        ids,
        ["c1", "c2"],
        "both results answer their calls, in order"
    );
    a.replied(&reply("", &[("c3", "fs_list", "{}")]));
    let Move::Call { why, .. } = a.next(&crate::progress::Silent).await? else {
        anyhow::bail!("a call")
    };
    assert_eq!(why, None, "a silent reply's call carries no earlier reason");
    a.observe(&Observation {
        seq: 4,
        tool: "fs.list".into(),
        ok: true,
        output: "a\nb".into(),
        ran: None,
        artifact: None,
    });
    assert!(matches!(a.next(&crate::progress::Silent).await?, Move::Think(_)));
    a.replied(&reply("All done.", &[]));
    assert_eq!(
        a.next(&crate::progress::Silent).await?,
        Move::Finish {
            summary: "All done.".into()
        }
    );
    Ok(())
}

#[tokio::test]
async fn bad_calls_are_answered_then_the_run_fails_after_a_bound() -> anyhow::Result<()> {
    let mut a = LlmAgent::new(spec());
    for i in 0..MAX_BAD_REPLIES {
        assert!(matches!(a.next(&crate::progress::Silent).await?, Move::Think(_)), "round {i}");
        let bad = if i % 2 == 0 {
            ("x", "fs_write", "{not json")
        } else {
            ("y", "rm_rf", "{}")
        };
        a.replied(&reply("", &[bad]));
    }
    let Move::Fail { reason } = a.next(&crate::progress::Silent).await? else {
        anyhow::bail!("must fail")
    };
    assert!(reason.contains("3 times in a row"), "{reason}");
    // The model was told what was wrong each time.
    let errors: Vec<_> = a
        .messages
        .iter()
        .filter(|m| m.role == provider::Role::Tool)
        .map(|m| m.content.clone())
        .collect();
    assert!(errors[0].contains("not a JSON object"), "{errors:?}");
    assert!(errors[1].contains("no tool named \"rm_rf\""), "{errors:?}");
    Ok(())
}

#[tokio::test]
async fn state_survives_a_restore_mid_turn() -> anyhow::Result<()> {
    let mut a = LlmAgent::new(spec());
    a.next(&crate::progress::Silent).await?;
    a.replied(&reply(
        "",
        &[
            ("c1", "ask_user", r#"{"question":"which file?"}"#),
            ("c2", "fs_delete", r#"{"path":"x"}"#),
        ],
    ));
    assert_eq!(
        a.next(&crate::progress::Silent).await?,
        Move::Ask {
            question: "which file?".into()
        }
    );
    let saved = a.state();
    assert!(saved.get("messages").is_none(), "the conversation is history: {saved}");
    let mut b = LlmAgent::new(spec());
    b.restore(&saved)?;
    b.restore_history(a.history_since(0), &StepOutputs::default())?;
    assert_eq!((b.messages.len(), b.history_len()), (1, 1), "the reply");
    b.observe(&Observation {
        seq: 2,
        tool: "ask_user".into(),
        ok: true,
        output: "the one in config/".into(),
        ran: None,
        artifact: None,
    });
    let Move::Call { call, .. } = b.next(&crate::progress::Silent).await? else {
        anyhow::bail!("the second call follows")
    };
    assert_eq!(call.tool, "fs.delete");
    assert_eq!(b.working_memory().map(|w| w.done.len()), Some(1));
    Ok(())
}

#[test]
fn long_results_are_excerpted_with_a_reference() {
    let long = "line\n".repeat(5000);
    let e = excerpt(&long, 7, Some("sha256:abc"));
    assert!(e.len() < RESULT_EXCERPT_BYTES + 300);
    assert!(e.contains("artifact sha256:abc in the blob store"), "{e}");
    assert!(e.contains("--step 7"), "{e}");
    assert_eq!(excerpt("short", 1, None), "short");
}

#[tokio::test]
async fn history_is_written_once_and_rebuilds_the_same_conversation() -> anyhow::Result<()> {
    let long = Spec {
        max_turns: 50,
        ..spec()
    };
    let mut a = LlmAgent::new(long.clone());
    let mut sizes = Vec::new();
    let mut saved = Vec::new();
    for turn in 1..=20 {
        assert!(matches!(a.next(&crate::progress::Silent).await?, Move::Think(_)));
        a.replied(&reply(
            &format!("turn {turn}"),
            &[(&format!("c{turn}"), "fs_read", r#"{"path":"a.txt"}"#)],
        ));
        a.next(&crate::progress::Silent).await?;
        a.observe(&Observation {
            seq: 2 * turn,
            tool: "fs.read".into(),
            ok: true,
            output: "x".repeat(2000),
            ran: None,
            artifact: None,
        });
        // What a checkpoint writes: the state, and the entries since the last one.
        sizes.push(serde_json::to_vec(&a.state())?.len());
        saved.extend(a.history_since(saved.len()));
    }
    assert_eq!(saved.len(), a.history_len(), "every entry written once");
    assert!(
        sizes[19] < sizes[1] + 200,
        "the state does not grow with the run: {sizes:?}"
    );
    // Each read's output is the step's result in the journal: the history names it, no copy.
    let bytes: usize = saved.iter().map(|e| e.to_string().len()).sum();
    assert!(bytes < 20 * 1000, "{bytes} bytes of history for 40 KB of outputs");
    let outputs = StepOutputs::new((1..=20).map(|t| (2 * t, "x".repeat(2000))).collect());
    let mut b = LlmAgent::new(long.clone());
    b.restore(&a.state())?;
    b.restore_history(saved.clone(), &outputs)?;
    assert_eq!(b.messages, a.messages);
    assert_eq!(b.working_memory(), a.working_memory());
    let (Move::Think(x), Move::Think(y)) = (a.next(&crate::progress::Silent).await?, b.next(&crate::progress::Silent).await?) else {
        anyhow::bail!("both ask the model")
    };
    assert_eq!(x, y, "the same model input");
    // A result that is not the one the agent saw is refused, and so is a missing one.
    for (seq, output) in [(40, "y".repeat(2000)), (41, "x".repeat(2000))] {
        let mut outputs: std::collections::BTreeMap<i64, String> =
            (1..20).map(|t| (2 * t, "x".repeat(2000))).collect();
        outputs.insert(seq, output);
        let mut c = LlmAgent::new(long.clone());
        c.restore(&a.state())?;
        let err = c
            .restore_history(saved.clone(), &StepOutputs::new(outputs))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("output of step 40"), "{err}");
    }
    Ok(())
}

#[test]
fn a_checkpoint_of_schema_1_with_the_conversation_inside_still_restores() -> anyhow::Result<()> {
    let old = serde_json::json!({
        "messages": [
            {"role": "assistant", "content": "reading", "toolCalls": [
                {"id": "c1", "name": "fs_read", "arguments": "{\"path\":\"a\"}"}]},
            {"role": "tool", "content": "hello", "toolCallId": "c1"}
        ],
        "turns": [0],
        "pending": [], "inFlight": null, "modelCalls": 1, "badReplies": 0, "lastBad": null,
        "finished": null, "failed": null,
        "working": {"goal": "g", "done": [{"step": 2, "tool": "fs.read", "status": "ok", "summary": "hello"}]}
    });
    let mut a = LlmAgent::new(spec());
    a.restore(&old)?;
    assert_eq!(a.messages.len(), 2);
    assert_eq!(a.working_memory().map(|w| w.done.len()), Some(1));
    assert_eq!(a.history_since(0).len(), 3, "written as history with the next checkpoint");
    assert!(a.state().get("messages").is_none());
    Ok(())
}
