//! Failures that are not crashes, and crashes that keep coming: transient errors retried with
//! backoff, a full disk, a spent retry budget, a run that keeps killing its worker.

use super::{crash_at, run_tidy, worker_once};
use crate::common::{text, Cli};

#[test]
fn a_transient_error_is_retried_with_backoff_and_each_retry_is_shown() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let out = run_tidy(
        &cli,
        &effects,
        &[("REINS_FAULT_ERROR", "intent_write:busy:2")],
        &[],
    )?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded");
    let retries = show["retries"].as_array().cloned().unwrap_or_default();
    assert_eq!(retries.len(), 2, "{show}");
    assert!(retries.iter().all(|r| r["class"] == "transient"));
    assert!(
        retries[1]["delayMs"].as_i64() > retries[0]["delayMs"].as_i64(),
        "the backoff grows: {retries:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&effects)?.lines().count(),
        3,
        "each effect once"
    );
    let human = text(&cli.run(&["show", &id])?);
    assert!(
        human.contains("retries (budget used)") && human.contains("transient"),
        "{human}"
    );
    Ok(())
}

#[test]
fn a_full_disk_when_writing_the_intent_runs_nothing_and_waits_for_a_person() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let out = run_tidy(
        &cli,
        &effects,
        &[("REINS_FAULT_ERROR", "intent_write:enospc")],
        &["--retry-max", "5"],
    )?;
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended", "{}", text(&out));
    let reason = show["run"]["lastError"].as_str().unwrap_or("");
    assert!(
        reason.contains("No space left") && reason.contains("disk is full"),
        "{reason}"
    );
    assert!(
        show["retries"].as_array().is_none_or(Vec::is_empty),
        "not retried blindly"
    );
    assert!(!effects.exists(), "the effect never ran");
    assert!(
        show["intents"].as_array().is_none_or(Vec::is_empty),
        "no intent was written"
    );

    // Space freed: resume, and it completes with every effect once.
    cli.run(&["resume", &id])?;
    let worker = worker_once(&cli, &effects)?;
    assert_eq!(worker.status.code(), Some(0), "{}", text(&worker));
    assert_eq!(cli.json(&["show", &id])?["run"]["state"], "succeeded");
    assert_eq!(std::fs::read_to_string(&effects)?.lines().count(), 3);
    Ok(())
}

#[test]
fn a_spent_retry_budget_suspends_the_run_with_the_reason() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    run_tidy(
        &cli,
        &effects,
        &[("REINS_FAULT_ERROR", "intent_write:busy")],
        &["--retry-max", "2"],
    )?;
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("retry budget exhausted after 2 retries"),
        "{show}"
    );
    assert_eq!(show["retries"].as_array().map(Vec::len), Some(2));
    Ok(())
}

#[test]
fn a_run_that_keeps_killing_its_worker_stops_at_the_budget() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    crash_at(&cli, "after_intent", &effects)?;
    // Every worker that takes it over dies at the same point.
    for _ in 0..2 {
        let w = cli
            .cmd()
            .args(["--retry-max", "2", "worker", "--once"])
            .env("REINS_FAULT", "after_confirm")
            .env("REINS_EFFECT_LOG", &effects)
            .output()?;
        assert_eq!(w.status.code(), None, "died again: {}", text(&w));
    }
    let w = cli
        .cmd()
        .args(["--retry-max", "2", "worker", "--once"])
        .env("REINS_FAULT", "after_confirm")
        .env("REINS_EFFECT_LOG", &effects)
        .output()?;
    assert_eq!(w.status.code(), Some(0), "{}", text(&w));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("lost its worker"),
        "{show}"
    );
    let retries = show["retries"].as_array().cloned().unwrap_or_default();
    assert_eq!(retries.len(), 3);
    assert!(retries.iter().all(|r| r["class"] == "worker_lost"));
    Ok(())
}
