//! A crash whose outcome the disk cannot tell: the run suspends instead of guessing, and a person
//! marks the effect done, skips it or retries it.

use super::{crash_at, worker_once};
use crate::common::{text, Cli};

#[test]
fn files_changed_by_hand_after_a_crash_suspend_the_run_instead_of_guessing() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    crash_at(&cli, "after_intent", &effects)?;
    // The pending effect is "move config/nginx.conf.bak to archive/". Someone deletes the file by
    // hand: the disk now matches neither the state before the move nor the state after it.
    std::fs::remove_file(cli.ws().join("config/nginx.conf.bak"))?;

    let worker = worker_once(&cli, &effects)?;
    assert_eq!(worker.status.code(), Some(0), "{}", text(&worker));
    assert!(
        text(&worker).contains("outcome unknown"),
        "{}",
        text(&worker)
    );
    assert!(!effects.exists(), "no effect may run on a guess");
    assert!(
        cli.ws().join("tmp/render-cache.tmp").exists(),
        "later steps did not run"
    );

    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("match neither"),
        "{show}"
    );
    assert_eq!(show["intents"][0]["status"], "unknown");
    assert_eq!(
        show["steps"][1]["status"], "unknown",
        "the step says so too"
    );
    let human = cli.run(&["show", &id])?;
    assert!(text(&human).contains("suspended"), "{}", text(&human));
    Ok(())
}

/// Crashes before the first effect (the move of config/nginx.conf.bak), lets `change` alter the
/// disk so the outcome cannot be known, and returns the suspended run's id and its unknown intent.
fn suspended_with_unknown_outcome(
    cli: &Cli,
    effects: &std::path::Path,
    change: impl FnOnce(&Cli) -> anyhow::Result<()>,
) -> anyhow::Result<(String, String)> {
    crash_at(cli, "after_intent", effects)?;
    change(cli)?;
    let worker = worker_once(cli, effects)?;
    assert!(text(&worker).contains("reins resolve"), "{}", text(&worker));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended");
    Ok((
        id,
        show["intents"][0]["id"].as_str().unwrap_or("").to_owned(),
    ))
}

fn resume_with_worker(cli: &Cli, effects: &std::path::Path) -> anyhow::Result<String> {
    let worker = worker_once(cli, effects)?;
    assert_eq!(worker.status.code(), Some(0), "{}", text(&worker));
    Ok(text(&worker))
}

#[test]
fn a_person_marks_an_unknown_effect_done_and_the_run_goes_on() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let (id, intent) = suspended_with_unknown_outcome(&cli, &effects, |cli| {
        Ok(std::fs::remove_file(
            cli.ws().join("config/nginx.conf.bak"),
        )?)
    })?;
    let out = cli.run(&[
        "resolve",
        &intent[..8],
        "--done",
        "--note",
        "I moved it myself",
    ])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("queued again"), "{}", text(&out));
    resume_with_worker(&cli, &effects)?;

    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(show["intents"][0]["status"], "confirmed");
    assert!(show["intents"][0]["settledBy"]
        .as_str()
        .unwrap_or("")
        .contains("I moved it myself"));
    let log = std::fs::read_to_string(&effects)?;
    assert_eq!(
        log.lines().count(),
        2,
        "the move was not run; delete and edit were:\n{log}"
    );
    assert!(
        !cli.ws().join("archive/nginx.conf.bak").exists(),
        "nothing moved a file that was gone"
    );
    Ok(())
}

#[test]
fn a_person_skips_an_unknown_effect_and_the_agent_hears_it() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let (id, intent) = suspended_with_unknown_outcome(&cli, &effects, |cli| {
        Ok(std::fs::remove_file(
            cli.ws().join("config/nginx.conf.bak"),
        )?)
    })?;
    let out = cli.run(&["resolve", &intent, "--skip"])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    resume_with_worker(&cli, &effects)?;
    let show = cli.json(&["show", &id])?;
    // The plan expected the move to succeed, so the script agent stops there.
    assert_eq!(show["run"]["state"], "failed", "{show}");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("skipped"),
        "{show}"
    );
    assert_eq!(show["intents"][0]["status"], "skipped");
    assert!(!effects.exists(), "nothing ran");
    Ok(())
}

#[test]
fn a_person_retries_an_unknown_effect_and_it_runs_once_on_the_new_content() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let (id, intent) = suspended_with_unknown_outcome(&cli, &effects, |cli| {
        Ok(std::fs::write(
            cli.ws().join("config/nginx.conf.bak"),
            "edited by hand\n",
        )?)
    })?;
    let out = cli.run(&["resolve", &intent, "--retry"])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Deciding twice is refused: the intent is gone (retry) or settled.
    let again = cli.run(&["resolve", &intent, "--done"])?;
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    resume_with_worker(&cli, &effects)?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(cli.read("archive/nginx.conf.bak")?, "edited by hand\n");
    assert_eq!(std::fs::read_to_string(&effects)?.lines().count(), 3);
    let intents = show["intents"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        intents.len(),
        3,
        "one intent per effect: the retried one replaced the unknown one"
    );
    Ok(())
}
