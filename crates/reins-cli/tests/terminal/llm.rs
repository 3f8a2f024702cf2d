//! The LLM agent through the real `reins` binary against a scripted OpenAI-compatible server:
//! streaming to the terminal, a review, a question answered with `reins answer`, the context
//! manifest, a crash right after a model call with nothing repeated on resume, and API keys that
//! are refused rather than stored anywhere but the OS keyring.

use crate::common;

use common::{text, Cli};
use reins_tests::llm_setup::files_containing;
use reins_tests::mock_llm::{self, MockLlm};

pub(crate) fn llm_run(
    cli: &Cli,
    mock: &MockLlm,
    goal: &str,
    strict: bool,
) -> std::process::Command {
    let mut c = if strict { cli.strict_cmd() } else { cli.cmd() };
    c.args(["run", "--llm", goal, "--workspace"])
        .arg(cli.ws())
        .args([
            "--base-url",
            &mock.base_url(),
            "--model",
            "mock-model",
            "--timeout",
            "5",
        ]);
    c
}

#[test]
fn a_reviewed_run_streams_waits_and_finishes_through_the_cli() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Reading the runbook first.",
            &[("r1", "fs_read", r#"{"path":"docs/RUNBOOK.md"}"#)],
        ),
        mock_llm::calls(
            "Writing the note.",
            &[(
                "w1",
                "fs_write",
                r#"{"path":"docs/NOTE.md","content":"rotate daily\n"}"#,
            )],
        ),
        mock_llm::text("Wrote docs/NOTE.md with the rotation advice.", 3),
    ])?;
    let out = llm_run(&cli, &mock, "leave a note for on-call", true)
        .arg("--no-wait")
        .output()?;
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(3), "waits for the review: {shown}");
    assert!(shown.contains("asking mock-model"), "{shown}");
    assert!(
        shown.contains("Reading the runbook first."),
        "streamed text: {shown}"
    );
    assert!(shown.contains("fs.read"), "{shown}");
    assert!(!cli.ws().join("docs/NOTE.md").exists());

    let id = cli.only_run()?;
    let pending = cli.json(&["approvals"])?;
    let approval = pending[0]["id"].as_str().unwrap_or_default().to_owned();
    assert!(!approval.is_empty(), "{pending}");
    let out = cli.strict_cmd().args(["approve", &approval]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = cli.strict_cmd().args(["worker", "--once"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Wrote docs/NOTE.md with the rotation advice."),
        "{}",
        text(&out)
    );
    assert_eq!(cli.read("docs/NOTE.md")?, "rotate daily\n");
    assert_eq!(mock.count(), 3);

    let shown = text(&cli.strict_cmd().args(["show", &id]).output()?);
    assert!(shown.contains("succeeded"), "{shown}");
    assert!(shown.contains("model: 3 call(s)"), "{shown}");
    let ctx = text(&cli.strict_cmd().args(["show", &id, "--context"]).output()?);
    for want in [
        "step 1  mock-model",
        "working-memory",
        "hard layer: never cut",
        "profile facts used: none",
    ] {
        assert!(ctx.contains(want), "{want:?} in {ctx}");
    }
    Ok(())
}

#[test]
fn a_question_is_answered_with_reins_answer() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "",
            &[(
                "q",
                "ask_user",
                r#"{"question":"Keep 7 or 14 days of logs?"}"#,
            )],
        ),
        mock_llm::text("Set to 14 days.", 50),
    ])?;
    let out = llm_run(&cli, &mock, "set log retention", false)
        .arg("--no-wait")
        .output()?;
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(3), "{shown}");
    assert!(shown.contains("Keep 7 or 14 days of logs?"), "{shown}");
    let id = cli.only_run()?;
    assert_eq!(cli.json(&["show", &id])?["run"]["state"], "awaiting_input");
    let q = text(&cli.cmd().args(["answer", &id]).output()?);
    assert!(q.contains("asks: Keep 7 or 14 days of logs?"), "{q}");
    let out = cli.cmd().args(["answer", &id, "14 days"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let again = cli.cmd().args(["answer", &id, "7"]).output()?;
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    let out = cli.cmd().args(["worker", "--once"]).output()?;
    assert!(text(&out).contains("Set to 14 days."), "{}", text(&out));
    assert!(
        text(&out).contains("handing your answer to step 2 to the agent"),
        "{}",
        text(&out)
    );
    let told = mock_llm::tool_results(&mock.seen()[1]);
    assert_eq!(told, vec![("q".to_owned(), "14 days".to_owned())]);
    Ok(())
}

#[test]
fn without_a_keyring_a_key_is_refused_and_stored_nowhere() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let key = "sk-test-Qw3rTy8uIo9pAs7dFg6hJk5lZx4cVb2n";
    let mut child = cli
        .cmd()
        .args(["keys", "set", "openai"])
        // No session bus: the OS keyring cannot be reached.
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write as _;
        stdin.write_all(key.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    let shown = text(&out);
    assert_ne!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("keyring is not available"), "{shown}");
    assert!(
        shown.contains("will not store one anywhere else"),
        "{shown}"
    );
    assert!(!shown.contains(key), "the key is not echoed");
    // The key on the command line is not even accepted as an argument.
    let out = cli.cmd().args(["keys", "set", "openai", key]).output()?;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let found = files_containing(&cli.data(), key.as_bytes())?;
    assert!(found.is_empty(), "the key is in {found:?}");
    // A run naming a key that is not there is refused before it starts.
    let out = cli
        .cmd()
        .args(["run", "--llm", "x", "--workspace"])
        .arg(cli.ws())
        .args(["--key", "openai"])
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .output()?;
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("keyring"), "{}", text(&out));
    Ok(())
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_crash_after_a_model_call_repeats_no_call_and_no_effect() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let effects = cli.tmp.path().join("effects.log");
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Writing two files.",
            &[
                ("a", "fs_write", r#"{"path":"docs/a.md","content":"A\n"}"#),
                ("b", "fs_write", r#"{"path":"docs/b.md","content":"B\n"}"#),
            ],
        ),
        mock_llm::text("Both written.", 50),
    ])?;
    let crashed = llm_run(&cli, &mock, "write a and b", false)
        .env("REINS_FAULT", "after_model_step")
        .env("REINS_EFFECT_LOG", &effects)
        .output()?;
    assert_eq!(crashed.status.code(), None, "aborted: {}", text(&crashed));
    assert_eq!(mock.count(), 1);
    assert!(
        !cli.ws().join("docs/a.md").exists(),
        "the crash came before any tool ran"
    );

    let out = cli
        .cmd()
        .args(["worker", "--once"])
        .env("REINS_EFFECT_LOG", &effects)
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Both written."), "{}", text(&out));
    assert_eq!(
        mock.count(),
        2,
        "the completed model call was not asked again"
    );
    assert_eq!(cli.read("docs/a.md")?, "A\n");
    assert_eq!(cli.read("docs/b.md")?, "B\n");
    let log = std::fs::read_to_string(&effects)?;
    assert_eq!(log.lines().count(), 2, "each write ran once: {log}");
    Ok(())
}
