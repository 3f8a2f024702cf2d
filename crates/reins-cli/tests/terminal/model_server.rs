//! A missing model server says so at once: the first call of a run that finds nothing listening
//! suspends it with what to do, and the CLI exits 3; later in a run a refused connection is retried
//! under the budget, each retry printed with its wait; `reins doctor` asks the server for its
//! models.

use crate::common;

use common::{text, Cli};
use reins_tests::mock_llm::{self, MockLlm};

/// A port nothing listens on (bound, then let go).
fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

#[test]
fn no_server_on_the_first_call_suspends_at_once_with_what_to_do() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let url = format!("http://127.0.0.1:{}/v1", free_port()?);
    let started = std::time::Instant::now();
    let out = cli
        .cmd()
        .args(["run", "--llm", "tidy the logs", "--workspace"])
        .arg(cli.ws())
        .args(["--base-url", &url])
        .output()?;
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "no hour of retries"
    );
    assert!(
        said.contains(&format!("nothing answers at {url}")),
        "{said}"
    );
    assert!(said.contains("connection was refused"), "{said}");
    assert!(said.contains("--base-url URL"), "{said}");
    assert!(!said.contains("retry 1 of"), "not retried: {said}");
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended");
    assert!(
        show["run"]["lastError"]
            .as_str()
            .unwrap_or("")
            .contains("no model server"),
        "{show}"
    );

    let doctor = cli.cmd().args(["doctor", "--base-url", &url]).output()?;
    let said = text(&doctor);
    assert_eq!(
        doctor.status.code(),
        Some(0),
        "a missing server is a warning: {said}"
    );
    assert!(
        said.contains(&format!("[warn] model server {url}: nothing answers")),
        "{said}"
    );
    Ok(())
}

#[test]
fn a_server_lost_later_in_the_run_is_retried_with_each_wait_printed() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![mock_llm::calls(
        "Reading the runbook.",
        &[("r1", "fs_read", r#"{"path":"docs/RUNBOOK.md"}"#)],
    )])?;
    mock.stop_after(1);
    let out = cli
        .cmd()
        .args([
            "--retry-max",
            "2",
            "run",
            "--llm",
            "read the runbook",
            "--workspace",
        ])
        .arg(cli.ws())
        .args(["--base-url", &mock.base_url(), "--model", "mock-model"])
        .output()?;
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(said.contains("retry 1 of 2 in"), "{said}");
    assert!(said.contains("retry 2 of 2 in"), "{said}");
    assert!(said.contains("retry budget exhausted"), "{said}");
    assert_eq!(mock.count(), 1, "the server answered once, then went away");
    Ok(())
}

#[test]
fn doctor_lists_the_models_a_live_server_offers() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(Vec::new())?;
    mock.set_models(&["llama3.1", "qwen2.5-coder"]);
    let out = cli
        .cmd()
        .args(["doctor", "--base-url", &mock.base_url()])
        .output()?;
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "[ok  ] model server {}: answers, and offers llama3.1; models: llama3.1, qwen2.5-coder",
            mock.base_url()
        )),
        "{said}"
    );
    assert_eq!(mock.model_lists(), 1);
    Ok(())
}
