//! An agent's `memory.remember` calls under the default policy: a confident fact in an allowed
//! category is kept with its run, step and words; a doubtful one waits for the user; one carrying a
//! secret fails the step and leaves no trace in memory; done again after a restart it changes
//! nothing; and with memory off the agent is refused.

use reins_core::api::{FactOrigin, NewFact, RememberedView, Silent};
use reins_tests::{plan, raw_db, step, Sandbox};

const PLAN: &str = r#"
name = "learn the user"
goal = "note what the user prefers"

[[steps]]
tool = "memory.remember"
why = "the user said they write Rust"
args = { category = "language", key = "code", value = "Rust", confidence = 0.95, source = "I mostly write Rust" }

[[steps]]
tool = "memory.remember"
args = { category = "style", key = "tone", value = "terse", confidence = 0.4 }

[[steps]]
tool = "memory.remember"
args = { category = "preference", key = "token", value = "ghp_0123456789abcdefghijABCDEFGHIJ012345" }
"#;

#[tokio::test]
async fn an_agents_facts_are_kept_suggested_or_refused_by_memorys_rules() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let run = engine.create_run(&plan(PLAN)?, &sb.ws(), &Silent).await?;
    engine.drive(run, &Silent).await?;
    let facts = engine.memory_list(None, None).await?;
    assert_eq!(facts.len(), 1, "{facts:?}");
    let f = &facts[0];
    assert_eq!(
        (f.category.as_str(), f.key.as_str(), f.value.as_str()),
        ("language", "code", "Rust")
    );
    assert_eq!(
        f.run_id.as_deref(),
        Some(run.to_string().as_str()),
        "provenance: the run"
    );
    assert_eq!(f.step_seq, Some(1), "provenance: the step");
    assert_eq!(f.source_text.as_deref(), Some("I mostly write Rust"));

    let waiting = engine.memory_suggestions().await?;
    assert_eq!(waiting.len(), 1);
    assert_eq!(
        (waiting[0].key.as_str(), waiting[0].step_seq),
        ("tone", Some(2))
    );

    let third = step(&engine, run, 3)
        .await?
        .ok_or_else(|| anyhow::anyhow!("step 3"))?;
    assert_eq!(
        third.status,
        reins_core::api::StepStatus::Failed,
        "{third:?}"
    );
    assert!(third
        .result
        .unwrap_or_default()
        .contains("never stores secrets"));
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT value FROM memory_versions UNION ALL SELECT value FROM memory_suggestions",
    )
    .fetch_all(&raw_db(&engine).await?)
    .await?;
    assert!(rows.iter().all(|(v,)| !v.contains("ghp_")), "{rows:?}");
    let audit: Vec<(String,)> = sqlx::query_as("SELECT payload FROM audit_events")
        .fetch_all(&raw_db(&engine).await?)
        .await?;
    assert!(
        audit.iter().all(|(p,)| !p.contains("ghp_0123456789")),
        "no secret in the audit"
    );

    // The same run's facts proposed again (as after a restart) change nothing.
    let again = engine
        .memory_remember(NewFact {
            category: "style".into(),
            key: "tone".into(),
            value: "terse".into(),
            confidence: Some(0.4),
            origin: FactOrigin::Agent {
                run: Some(run),
                step: Some(2),
                source: None,
            },
        })
        .await?;
    assert!(matches!(again, RememberedView::Suggested { .. }));
    assert_eq!(
        engine.memory_suggestions().await?.len(),
        1,
        "not suggested twice"
    );
    Ok(())
}

#[tokio::test]
async fn with_memory_off_an_agent_cannot_add_facts() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    engine.memory_configure(Some(false), None, None).await?;
    let run = engine.create_run(&plan(PLAN)?, &sb.ws(), &Silent).await?;
    engine.drive(run, &Silent).await?;
    assert!(engine.memory_list(None, None).await?.is_empty());
    assert!(engine.memory_suggestions().await?.is_empty());
    let first = step(&engine, run, 1)
        .await?
        .ok_or_else(|| anyhow::anyhow!("step 1"))?;
    assert!(
        first.result.unwrap_or_default().contains("memory is off"),
        "the agent is told why"
    );
    Ok(())
}
