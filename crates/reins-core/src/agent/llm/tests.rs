use super::*;
use crate::provider::ToolCall as WireCall;

fn spec() -> Spec {
    Spec {
        name: "t".into(),
        goal: "fix the config".into(),
        settings: provider::Settings::default(),
        max_turns: 5,
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
    let Move::Think(input) = a.next().await? else {
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
        let Move::Call { call, why } = a.next().await? else {
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
            artifact: None,
        });
    }
    let Move::Think(input) = a.next().await? else {
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
    let Move::Call { why, .. } = a.next().await? else {
        anyhow::bail!("a call")
    };
    assert_eq!(why, None, "a silent reply's call carries no earlier reason");
    a.observe(&Observation {
        seq: 4,
        tool: "fs.list".into(),
        ok: true,
        output: "a\nb".into(),
        artifact: None,
    });
    assert!(matches!(a.next().await?, Move::Think(_)));
    a.replied(&reply("All done.", &[]));
    assert_eq!(
        a.next().await?,
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
        assert!(matches!(a.next().await?, Move::Think(_)), "round {i}");
        let bad = if i % 2 == 0 {
            ("x", "fs_write", "{not json")
        } else {
            ("y", "rm_rf", "{}")
        };
        a.replied(&reply("", &[bad]));
    }
    let Move::Fail { reason } = a.next().await? else {
        anyhow::bail!("must fail")
    };
    assert!(reason.contains("3 times in a row"), "{reason}");
    // The model was told what was wrong each time.
    let state: State = serde_json::from_value(a.state())?;
    let errors: Vec<_> = state
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
    a.next().await?;
    a.replied(&reply(
        "",
        &[
            ("c1", "ask_user", r#"{"question":"which file?"}"#),
            ("c2", "fs_delete", r#"{"path":"x"}"#),
        ],
    ));
    assert_eq!(
        a.next().await?,
        Move::Ask {
            question: "which file?".into()
        }
    );
    let saved = a.state();
    let mut b = LlmAgent::new(spec());
    b.restore(&saved)?;
    b.observe(&Observation {
        seq: 2,
        tool: "ask_user".into(),
        ok: true,
        output: "the one in config/".into(),
        artifact: None,
    });
    let Move::Call { call, .. } = b.next().await? else {
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
