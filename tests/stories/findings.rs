//! The red-team findings as runs: each reproduction, played through the facade as the attacker
//! played it through the CLI, must now stop for a person (or be refused) with nothing run.

use reins_core::api::{DriveOutcome, Risk, RunState, StepStatus};
use reins_tests::review::waiting;
use reins_tests::{step, Sandbox};

/// A plan of one `shell.exec` step running `command`.
fn shell(command: &str) -> anyhow::Result<String> {
    Ok(format!(
        "name = \"t\"\ngoal = \"g\"\n[[steps]]\ntool = \"shell.exec\"\nargs = {{ command = {} }}\n",
        serde_json::to_string(command)?
    ))
}

/// F4: with an everyday rule allowing `printf` and `echo`, `printf -v 'a[$(cmd)]'` ran `cmd` with
/// nobody asked. It is high risk now, and high risk is reviewed whatever the rules say.
#[tokio::test]
async fn a_rule_allowing_printf_does_not_let_printf_v_run_code() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let rules = "[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\nprogram = \"printf\"\n\
                 [[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\nprogram = \"echo\"\n";
    let reins = sb.reins_with_rules(rules).await?;
    let marker = sb.tmp.path().join("via-printf-rule");
    let command = format!("printf -v 'a[$(touch {})]' x; echo done", marker.display());
    let (run, review) = sb.to_review(&reins, &shell(&command)?).await?;
    assert_eq!(review.risk, Risk::High, "{:?}", review.reasons);
    assert!(!marker.exists(), "nothing ran before the review");
    reins.reject(&review.id, "no", "user:test").await?;
    reins.drive(run, &reins_core::api::Silent).await?;
    assert!(!marker.exists(), "a rejected command never runs");
    Ok(())
}

/// F10: 1,500 nested `if`s overflowed the classifier's stack; the worker aborted at every pickup.
/// Now the command is too complex to review: high, parked, and the worker lives on.
#[tokio::test]
async fn a_command_nested_too_deep_is_reviewed_and_the_worker_survives() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let reins = sb.with_defaults().await?;
    let n = 1_500;
    let command = format!("{}:{}", "if :; then ".repeat(n), "; fi".repeat(n));
    let (run, review) = sb.to_review(&reins, &shell(&command)?).await?;
    assert_eq!(review.risk, Risk::High);
    assert!(
        review.reasons.iter().any(|r| r.contains("too complex")),
        "{:?}",
        review.reasons
    );
    // Picked up again, the run is still at its review: no crash, no loop.
    let again = reins.drive(run, &reins_core::api::Silent).await?;
    assert!(
        waiting(&again)
            || matches!(
                again,
                DriveOutcome::Skipped {
                    state: RunState::AwaitingApproval,
                    ..
                }
            ),
        "{again:?}"
    );
    let s = step(&reins, run, 1).await?;
    assert_eq!(s.map(|s| s.status), Some(StepStatus::AwaitingReview));
    Ok(())
}
