//! SIGTERM always ends a drain, in bounded time: a run waiting out a retry backoff is paused where
//! it waits; a model stream in flight or a long shell command finishes (once), then the run pauses
//! at its next safe point. Each against the real `reins` binary.

use crate::common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{signal, text, Cli};
use reins_tests::mock_llm::{self, MockLlm, Reply};

fn show(cli: &Cli, id: &str) -> anyhow::Result<serde_json::Value> {
    cli.json(&["show", id])
}

/// Waits until `what` holds of `reins show`, or fails after a minute.
fn until(cli: &Cli, what: impl Fn(&serde_json::Value) -> bool) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(id) = cli.only_run() {
            let s = show(cli, &id)?;
            if what(&s) {
                return Ok(id);
            }
        }
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting on the run");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGTERM, then the process's exit code and how long it took to exit. A process still alive
/// after 30 s is killed and the test fails: a drain that never ends is the bug this guards.
fn drain(mut child: Child) -> anyhow::Result<(Option<i32>, Duration, String)> {
    let start = Instant::now();
    signal(&child, rustix::process::Signal::TERM)?;
    while child.try_wait()?.is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            child.kill()?;
            let out = child.wait_with_output()?;
            anyhow::bail!("still draining after 30 s: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = start.elapsed();
    let out = child.wait_with_output()?;
    Ok((out.status.code(), took, text(&out)))
}

fn llm(cli: &Cli, mock: &MockLlm) -> std::process::Command {
    let mut c = cli.cmd();
    c.args(["run", "--llm", "read the runbook", "--workspace"])
        .arg(cli.ws())
        .args([
            "--base-url",
            &mock.base_url(),
            "--model",
            "mock-model",
            "--timeout",
            "20",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn in_backoff(s: &serde_json::Value) -> bool {
    s["run"]["state"] == "queued"
        && s["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("retry 1 of")
}

fn paused_by_drain(s: &serde_json::Value) -> bool {
    s["run"]["state"] == "paused"
        && s["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("drain")
}

#[test]
fn a_drain_during_a_retry_backoff_ends_at_once_with_the_run_paused() -> anyhow::Result<()> {
    // `reins run` in the foreground.
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![mock_llm::status(503, Some("120"))])?;
    let child = llm(&cli, &mock).spawn()?;
    let id = until(&cli, in_backoff)?;
    let (code, took, said) = drain(child)?;
    assert_eq!(code, Some(3), "{said}");
    assert!(
        took < Duration::from_secs(10),
        "took {took:?} of a 120 s backoff: {said}"
    );
    let s = show(&cli, &id)?;
    assert!(paused_by_drain(&s), "{s}");
    assert!(said.contains("is paused"), "{said}");
    assert_eq!(mock.count(), 1, "nothing was asked twice");
    let events = cli.json(&["audit", "list", "--run", &id])?;
    assert!(
        events.to_string().contains("run.pause_requested"),
        "{events}"
    );

    // `reins worker`, which the app's in-process worker shares.
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![mock_llm::status(503, Some("120"))])?;
    let out = llm(&cli, &mock).arg("--queue").output()?;
    assert!(out.status.success(), "{}", text(&out));
    let worker = cli
        .cmd()
        .args(["worker", "--poll-ms", "50"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let id = until(&cli, in_backoff)?;
    let (code, took, said) = drain(worker)?;
    assert_eq!(code, Some(0), "{said}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {said}");
    assert!(said.contains("1 paused"), "{said}");
    assert!(paused_by_drain(&show(&cli, &id)?));
    assert_eq!(mock.count(), 1);

    // Resumed, it goes on at once and finishes; the failed call is the only one repeated.
    mock.push(mock_llm::text("Nothing to do.", 2));
    let out = cli.run(&["resume", &id])?;
    assert!(out.status.success(), "{}", text(&out));
    let out = cli.run(&["worker", "--once"])?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(show(&cli, &id)?["run"]["state"], "succeeded");
    assert_eq!(mock.count(), 2);
    Ok(())
}

#[test]
fn a_drain_during_a_model_stream_lets_the_step_finish_then_pauses() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let Reply::Stream { chunks, .. } = mock_llm::calls(
        "Reading the runbook first, slowly.",
        &[("r1", "fs_read", r#"{"path":"docs/RUNBOOK.md"}"#)],
    ) else {
        anyhow::bail!("calls() makes a stream");
    };
    let slow = chunks.len() as u64 * 500;
    let mock = MockLlm::start(vec![
        Reply::Stream {
            chunks,
            gap_ms: 500,
        },
        mock_llm::text("The runbook says to rotate daily.", 3),
    ])?;
    let child = llm(&cli, &mock).spawn()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while mock.count() == 0 {
        anyhow::ensure!(Instant::now() < deadline, "the model was never asked");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, took, said) = drain(child)?;
    assert_eq!(code, Some(3), "{said}");
    assert!(
        took < Duration::from_millis(slow) + Duration::from_secs(10),
        "took {took:?}"
    );
    let id = cli.only_run()?;
    let s = show(&cli, &id)?;
    assert!(paused_by_drain(&s), "{s}");
    let steps = s["steps"].as_array().cloned().unwrap_or_default();
    assert_eq!(steps.len(), 1, "the model step finished and was kept: {s}");
    assert!(said.contains("Reading the runbook first"), "{said}");

    // Resumed: the recorded reply is not asked for again.
    cli.run(&["resume", &id])?;
    let out = cli.run(&["worker", "--once"])?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(show(&cli, &id)?["run"]["state"], "succeeded");
    assert_eq!(
        mock.count(),
        2,
        "two calls: the streamed one was not repeated"
    );
    Ok(())
}

#[test]
fn a_drain_during_a_long_shell_command_lets_it_finish_once() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let policy = cli.tmp.path().join("allow-shell.toml");
    std::fs::write(
        &policy,
        "[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\n\n[[rules]]\ndecision = \"allow\"\ntool = \"fs.*\"\n",
    )?;
    let plan = cli.tmp.path().join("slow.toml");
    std::fs::write(
        &plan,
        "name = \"slow\"\ngoal = \"a slow command, then a note\"\n\
         [[steps]]\ntool = \"shell.exec\"\nargs = { command = \"sleep 3 && echo ran >> marker.txt\" }\n\
         [[steps]]\ntool = \"fs.write\"\nargs = { path = \"after.txt\", content = \"after\" }\n",
    )?;
    let child = cli
        .cmd()
        .env("REINS_POLICY", &policy)
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // The command is running once its process is recorded.
    let id = until(&cli, |s| {
        s["run"]["state"] == "running" && s["steps"].as_array().is_some_and(|a| !a.is_empty())
    })?;
    let (code, took, said) = drain(child)?;
    assert_eq!(code, Some(3), "{said}");
    assert!(took < Duration::from_secs(13), "took {took:?}");
    assert!(paused_by_drain(&show(&cli, &id)?), "{said}");
    assert_eq!(
        cli.read("marker.txt")?,
        "ran\n",
        "the command ran to its end, once"
    );
    assert!(
        !cli.ws().join("after.txt").exists(),
        "nothing ran after the safe point"
    );

    let out = cli
        .cmd()
        .env("REINS_POLICY", &policy)
        .args(["resume", &id])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = cli
        .cmd()
        .env("REINS_POLICY", &policy)
        .args(["worker", "--once"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(show(&cli, &id)?["run"]["state"], "succeeded");
    assert_eq!(cli.read("marker.txt")?, "ran\n", "not run again on resume");
    assert_eq!(cli.read("after.txt")?, "after");
    Ok(())
}
