//! Budgets that pause: a run that reaches a limit of its budget (tokens, cost, steps) pauses at its
//! next safe point with its checkpoint verified, before anything more is spent. "Allow N more"
//! carries it on from there; "stop here" ends it. A new run's budget comes from the run itself,
//! else the Settings' default, else `[budget]` in policy.toml. (An external agent's own report of
//! its spending is in the terminal tests: `acp::budget`.)

use reins_core::api::{
    Budget, BudgetMeasure, DriveOutcome, LlmRunRequest, Price, RunState, Silent,
};
use reins_tests::llm_setup::{finished, setup, Setup};
use reins_tests::mock_llm;
use reins_tests::Sandbox;

/// Two writes, each asked for in its own model call (240 tokens each), then a last answer.
fn two_writes() -> Vec<mock_llm::Reply> {
    vec![
        mock_llm::calls(
            "First note.",
            &[("c1", "fs_write", r#"{"path":"notes/a.md","content":"a\n"}"#)],
        ),
        mock_llm::calls(
            "Second note.",
            &[("c2", "fs_write", r#"{"path":"notes/b.md","content":"b\n"}"#)],
        ),
        mock_llm::text("Both notes are written.", 50),
    ]
}

fn paused(outcome: &DriveOutcome) -> bool {
    matches!(
        outcome,
        DriveOutcome::NeedsHuman {
            state: RunState::Paused,
            ..
        }
    )
}

/// An LLM run with `budget` over [`two_writes`], driven until it stops for a person.
async fn llm_run_to_its_budget(
    budget: Budget,
    spec: impl FnOnce(LlmRunRequest) -> LlmRunRequest,
) -> anyhow::Result<(Setup, reins_core::api::RunId)> {
    let s = setup(two_writes(), false).await?;
    let run = s
        .reins
        .create_run_within(spec(s.spec("write two notes")), &s.sb.ws(), budget, &Silent)
        .await?;
    let outcome = s.settle(run, &Silent).await?;
    assert!(paused(&outcome), "{outcome:?}");
    Ok((s, run))
}

#[tokio::test]
async fn a_token_budget_pauses_the_llm_agent_before_its_next_call_and_allow_more_goes_on(
) -> anyhow::Result<()> {
    let tokens = Budget {
        tokens: Some(300),
        ..Budget::default()
    };
    let (s, run) = llm_run_to_its_budget(tokens, |r| r).await?;
    // The second model call took it past 300 tokens: its write waits, nothing more is asked.
    assert_eq!(s.mock.count(), 2, "no third model call");
    assert_eq!(s.sb.read("notes/a.md")?, "a\n");
    assert!(
        !s.sb.ws().join("notes/b.md").exists(),
        "the write after the limit waits"
    );
    let view = s.reins.budget(run).await?;
    assert!(view.waiting, "{view:?}");
    let reached = view
        .reached
        .ok_or_else(|| anyhow::anyhow!("no limit reached"))?;
    assert_eq!(reached.measure, BudgetMeasure::Tokens);
    assert_eq!(view.spent.tokens, 480, "two calls of 200 in and 40 out");
    let kinds = reins_tests::kinds(&s.reins, run).await?;
    assert!(kinds.iter().any(|k| k == "budget.reached"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "budget.set"), "{kinds:?}");
    // Resumed as it is, it would only pause again: refused, with what to do.
    let refused = s
        .reins
        .resume(run, reins_core::api::ResumeMode::Continue)
        .await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("allow more")),
        "{refused:?}"
    );

    let (after, resumed) = s
        .reins
        .allow_more(run, BudgetMeasure::Tokens, 1_000.0, "user:test")
        .await?;
    assert!(resumed.is_some(), "a run waiting at its budget goes on");
    assert_eq!(
        after.limits.tokens,
        Some(1_480),
        "counted from what it spent"
    );
    let outcome = s.settle(run, &Silent).await?;
    assert!(finished(&outcome, RunState::Succeeded), "{outcome:?}");
    assert_eq!(s.sb.read("notes/b.md")?, "b\n");
    assert_eq!(s.mock.count(), 3);
    let kinds = reins_tests::kinds(&s.reins, run).await?;
    assert_eq!(kinds.iter().filter(|k| *k == "budget.raised").count(), 1);
    Ok(())
}

#[tokio::test]
async fn stop_here_ends_the_run_at_its_budget_and_asks_the_model_nothing_more() -> anyhow::Result<()>
{
    let tokens = Budget {
        tokens: Some(300),
        ..Budget::default()
    };
    let (s, run) = llm_run_to_its_budget(tokens, |r| r).await?;
    let control = s.reins.stop_at_budget(run, "user:test").await?;
    assert_eq!(control.to, RunState::Cancelled);
    let outcome = s.reins.drive(run, &Silent).await?;
    assert!(
        matches!(
            outcome,
            DriveOutcome::Skipped {
                state: RunState::Cancelled,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(s.mock.count(), 2);
    assert!(!s.sb.ws().join("notes/b.md").exists());
    // Only a run waiting at its budget can be stopped there.
    assert!(s.reins.stop_at_budget(run, "user:test").await.is_err());
    Ok(())
}

#[tokio::test]
async fn a_cost_budget_counts_at_the_price_the_run_was_given() -> anyhow::Result<()> {
    // $10 and $50 per million tokens: one call of 200 in and 40 out costs $0.004.
    let cost = Budget {
        cost_usd: Some(0.006),
        ..Budget::default()
    };
    let (s, run) = llm_run_to_its_budget(cost, |r| LlmRunRequest {
        price: Some(Price {
            input_per_mtok: 10.0,
            output_per_mtok: 50.0,
        }),
        ..r
    })
    .await?;
    let view = s.reins.budget(run).await?;
    let reached = view
        .reached
        .ok_or_else(|| anyhow::anyhow!("no limit reached"))?;
    assert_eq!(reached.measure, BudgetMeasure::Cost);
    assert!((view.spent.cost_usd - 0.008).abs() < 1e-9, "{view:?}");
    assert_eq!(s.mock.count(), 2);
    Ok(())
}

const THREE_WRITES: &str = r#"
name = "three notes"
goal = "write three notes"
[[steps]]
tool = "fs.write"
args = { path = "a.txt", content = "a\n" }
[[steps]]
tool = "fs.write"
args = { path = "b.txt", content = "b\n" }
[[steps]]
tool = "fs.write"
args = { path = "c.txt", content = "c\n" }
"#;

#[tokio::test]
async fn a_new_run_takes_its_own_budget_then_the_settings_then_the_policy() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb
        .reins_with_rules(
            "[budget]\nsteps = 1\ntokens = 9000\n\n[[rules]]\ndecision = \"allow\"\ntool = \"fs.*\"\n",
        )
        .await?;
    let plan = reins_tests::plan(THREE_WRITES)?;
    // The policy alone: one step, then it pauses.
    let run = reins
        .create_run_within(&plan, &sb.ws(), Budget::default(), &Silent)
        .await?;
    assert!(paused(&reins.drive(run, &Silent).await?));
    assert!(sb.ws().join("a.txt").exists() && !sb.ws().join("b.txt").exists());
    let view = reins.budget(run).await?;
    assert_eq!(
        (view.limits.steps, view.limits.tokens),
        (Some(1), Some(9000))
    );

    // The Settings' default comes before the policy, limit by limit.
    let default = Budget {
        steps: Some(2),
        ..Budget::default()
    };
    reins.set_default_budget(&default).await?;
    let run = reins
        .create_run_within(&plan, &sb.ws(), Budget::default(), &Silent)
        .await?;
    let view = reins.budget(run).await?;
    assert_eq!(
        (view.limits.steps, view.limits.tokens),
        (Some(2), Some(9000))
    );

    // The run's own comes first.
    let own = Budget {
        steps: Some(5),
        ..Budget::default()
    };
    let run = reins
        .create_run_within(&plan, &sb.ws(), own, &Silent)
        .await?;
    assert_eq!(reins.budget(run).await?.limits.steps, Some(5));

    // Nonsense is refused, in the run and in the Settings.
    let zero = Budget {
        tokens: Some(0),
        ..Budget::default()
    };
    assert!(reins
        .create_run_within(&plan, &sb.ws(), zero, &Silent)
        .await
        .is_err());
    assert!(reins.set_default_budget(&zero).await.is_err());
    assert!(sb
        .reins_with_rules("[budget]\ncost_usd = -1\n")
        .await
        .is_err());
    Ok(())
}

#[tokio::test]
async fn a_run_paused_at_its_budget_is_announced_once_and_a_plain_pause_is_not(
) -> anyhow::Result<()> {
    use reins_core::api::{AlertScope, Alerts};
    let sb = Sandbox::new()?;
    let reins = sb
        .reins_with_rules("[[rules]]\ndecision = \"allow\"\ntool = \"fs.*\"\n")
        .await?;
    let mut alerts = Alerts::default();
    crate::alerts::look(&mut alerts, &reins, AlertScope::Team).await?;
    let plan = reins_tests::plan(THREE_WRITES)?;
    let one = Budget {
        steps: Some(1),
        ..Budget::default()
    };
    let at_budget = reins
        .create_run_within(&plan, &sb.ws(), one, &Silent)
        .await?;
    assert!(paused(&reins.drive(at_budget, &Silent).await?));
    let plain = reins.create_run(&plan, &sb.ws(), &Silent).await?;
    reins.pause(plain).await?;
    assert_eq!(reins.run_state(plain).await?, RunState::Paused);
    let told = crate::alerts::look(&mut alerts, &reins, AlertScope::Team).await?;
    let ids: Vec<_> = told.suspended.iter().map(|r| r.id).collect();
    assert_eq!(ids, [at_budget], "only the run that needs a decision");
    let again = crate::alerts::look(&mut alerts, &reins, AlertScope::Team).await?;
    assert!(again.suspended.is_empty(), "told once");
    Ok(())
}
