//! Claude Code's hooks as separate processes would call them: Claude Code runs read-only tools
//! side by side, so the first calls of a session arrive at once, each in its own `reins hook`.

use std::sync::Arc;

use reins_tests::{raw_db, PermitAll, Sandbox};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_calls_side_by_side_make_one_run_for_the_session() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    // Two processes' worth of Reins on one data dir.
    let a = sb.reins(Arc::new(PermitAll)).await?;
    let b = sb.reins(Arc::new(PermitAll)).await?;
    let ws = sb.ws().canonicalize()?.display().to_string();
    let deadline = std::time::Duration::from_secs(30);
    for n in 0..12 {
        let call = |tool_use: &str| {
            json!({"session_id": format!("side-by-side-{n}"), "cwd": ws,
                "hook_event_name": "PreToolUse", "tool_name": "Read",
                "tool_input": {"file_path": format!("{ws}/README.md")},
                "tool_use_id": tool_use})
            .to_string()
        };
        let (first, second) = (call("toolu_a"), call("toolu_b"));
        let (x, y) = tokio::join!(
            a.hook("claude-code", &first, deadline, false),
            b.hook("claude-code", &second, deadline, false)
        );
        let (x, y) = (x?, y?);
        assert_eq!(x.run, y.run, "session {n}: both calls went to one run");
        for answer in [x.answer, y.answer] {
            assert!(
                matches!(answer, Some(reins_core::api::HookAnswer::Allow { .. })),
                "{answer:?}"
            );
        }
    }
    let db = raw_db(&a).await?;
    let per_session: Vec<(String, i64)> =
        sqlx::query_as("SELECT name, COUNT(*) FROM runs GROUP BY name HAVING COUNT(*) > 1")
            .fetch_all(&db)
            .await?;
    assert!(
        per_session.is_empty(),
        "sessions with two runs: {per_session:?}"
    );
    let runs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM runs")
        .fetch_one(&db)
        .await?;
    assert_eq!(runs, 12);
    Ok(())
}

/// A request nobody can take up (the session's run is paused) is refused and withdrawn: when the
/// run goes on, it is not decided after Claude Code was told no.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_refused_while_the_run_is_paused_is_never_decided_later() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.reins(Arc::new(PermitAll)).await?;
    let ws = sb.ws().canonicalize()?.display().to_string();
    let call = |tool_use: &str, file: &str| {
        json!({"session_id": "paused", "cwd": ws, "hook_event_name": "PreToolUse",
            "tool_name": "Read", "tool_input": {"file_path": format!("{ws}/{file}")},
            "tool_use_id": tool_use})
        .to_string()
    };
    let deadline = std::time::Duration::from_secs(30);
    let first = reins
        .hook(
            "claude-code",
            &call("toolu_1", "README.md"),
            deadline,
            false,
        )
        .await?;
    let run = first
        .run
        .ok_or_else(|| anyhow::anyhow!("the session has a run"))?;
    reins.pause(run).await?;
    let refused = reins
        .hook("claude-code", &call("toolu_2", "OTHER.md"), deadline, false)
        .await?;
    assert!(
        matches!(&refused.answer, Some(reins_core::api::HookAnswer::Deny { reason }) if reason.contains("paused")),
        "{refused:?}"
    );
    reins
        .resume(run, reins_core::api::ResumeMode::Continue)
        .await?;
    reins.drive(run, &reins_core::api::Silent).await?;
    let third = reins
        .hook("claude-code", &call("toolu_3", "THIRD.md"), deadline, false)
        .await?;
    assert!(matches!(
        third.answer,
        Some(reins_core::api::HookAnswer::Allow { .. })
    ));
    // Two calls decided, one per step; the refused one is in no step.
    let steps = reins.run_detail(run).await?.steps;
    let asked: Vec<String> = steps
        .iter()
        .filter(|s| s.tool == "agent.permission")
        .map(|s| s.action.args["rawInput"]["file_path"].to_string())
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked.iter().all(|p| !p.contains("OTHER.md")), "{asked:?}");
    Ok(())
}
