//! The real Claude Code run headless by Reins (`reins run --claude GOAL`): its permission asks
//! arrive on the stream-json control channel and are answered through the same path as the hooks'.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::acp::agents_bin;
use super::claude::{card, finish};
use super::common::{text, Cli};
use reins_tests::mock_anthropic::{call, say, MockAnthropic};

/// `reins run --claude GOAL` (or `--resume SESSION`) in the workspace, against the scripted model.
pub(super) fn headless(cli: &Cli, mock: &MockAnthropic, how: &[&str]) -> anyhow::Result<Child> {
    let home = cli.tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    Ok(cli
        .strict_cmd()
        .arg("run")
        .args(how)
        .arg("--claude-program")
        .arg(agents_bin("claude")?.join("claude"))
        .args([
            "--pass-env",
            "ANTHROPIC_BASE_URL",
            "--pass-env",
            "ANTHROPIC_API_KEY",
            "--pass-env",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            "--workspace",
        ])
        .arg(cli.ws())
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?)
}

pub(super) fn reported(cli: &Cli, what: &str) -> anyhow::Result<Vec<Value>> {
    let page = cli.json(&["audit", "list", "--limit", "500"])?;
    Ok(page["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "agent.reported" && e["payload"]["what"] == what)
        .map(|e| e["payload"]["detail"].clone())
        .collect())
}

fn write_hello(cli: &Cli, times: usize) -> anyhow::Result<MockAnthropic> {
    let path = cli.ws().join("hello.txt").display().to_string();
    let write = call(
        "I will write hello.txt.",
        "Write",
        json!({"file_path": path, "content": "hello from claude\n"}),
    );
    let mut script = vec![write; times];
    script.push(say("Done: hello.txt is written."));
    MockAnthropic::start(script)
}

#[test]
fn a_headless_session_stops_for_review_and_finishes_once_approved() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = write_hello(&cli, 1)?;
    let mut child = headless(&cli, &mock, &["--claude", "Write hello.txt"])?;
    let card = card(&cli, &mut child)?;
    assert_eq!(card["agent"], "Claude Code", "{card}");
    let preview = card["preview"].as_str().unwrap_or_default();
    assert!(preview.contains("+hello from claude"), "{preview}");
    assert!(
        !cli.ws().join("hello.txt").exists(),
        "nothing before the review"
    );
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let said = finish(child)?;
    assert!(said.contains("Done: hello.txt is written."), "{said}");
    assert_eq!(cli.read("hello.txt")?, "hello from claude\n");

    // The run finished with Claude Code's turn; its timeline has the words, the result and the
    // token usage.
    let run = cli.only_run()?;
    let show = cli.json(&["show", &run])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    let results = reported(&cli, "tool_result")?;
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        (results[0]["tool"].as_str(), results[0]["ok"].as_bool()),
        (Some("Write"), Some(true))
    );
    let usage = reported(&cli, "usage")?;
    assert!(
        usage
            .first()
            .is_some_and(|u| u["usage"]["input_tokens"].as_i64() > Some(0)),
        "{usage:?}"
    );
    let words = reported(&cli, "message")?;
    assert!(
        words.iter().any(|w| w["text"] == "I will write hello.txt."),
        "{words:?}"
    );
    // What its result said it spent counts toward the run's budget.
    let budget = cli.json(&["budget", "show", &run])?;
    let tokens = |k: &str| usage[0]["usage"][k].as_i64().unwrap_or(0);
    assert_eq!(
        budget["spent"]["tokens"].as_i64(),
        Some(tokens("input_tokens") + tokens("output_tokens")),
        "{budget:#} against {usage:?}"
    );
    Ok(())
}

#[test]
fn a_card_outlives_a_killed_reins_and_the_resumed_session_is_answered_by_it() -> anyhow::Result<()>
{
    let cli = Cli::new()?;
    // The first Write is asked by the session Reins is killed in; the resumed session asks again.
    let mock = write_hello(&cli, 2)?;
    let mut child = headless(&cli, &mock, &["--claude", "Write hello.txt"])?;
    let card = card(&cli, &mut child)?;
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id())?)
        .ok_or_else(|| anyhow::anyhow!("no pid"))?;
    rustix::process::kill_process(pid, rustix::process::Signal::KILL)?;
    child.wait()?;
    assert!(!cli.ws().join("hello.txt").exists());

    // The card is still in the inbox; a person approves it with no Reins running.
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", text(&out));

    let run = cli.only_run()?;
    let show = cli.json(&["show", &run])?;
    let name = show["run"]["name"].as_str().unwrap_or_default();
    let session = name.rsplit(' ').next().unwrap_or_default().to_owned();
    // No Claude Code left behind by the killed Reins (it would go on unheard).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = Command::new("pgrep")
            .args(["-f", &format!("session-id {session}")])
            .output()?;
        match left.status.code() {
            Some(1) => break,
            Some(0) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => anyhow::bail!("Claude Code outlived the killed Reins: {}", text(&left)),
        }
    }
    let said = finish(headless(&cli, &mock, &["--resume", &session])?)?;
    assert!(said.contains("Done"), "{said}");
    assert_eq!(cli.read("hello.txt")?, "hello from claude\n");

    // One card, one approval, one write.
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(1), "{all}");
    let results = reported(&cli, "tool_result")?;
    assert_eq!(results.len(), 1, "{results:?}");
    let show = cli.json(&["show", &run])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    Ok(())
}

#[test]
fn with_no_wait_the_session_stops_at_its_card_and_a_worker_carries_it_on_once_decided(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    // The first Write is asked by the session `--no-wait` stops; the worker's session asks again.
    let mock = write_hello(&cli, 2)?;
    let child = headless(&cli, &mock, &["--claude", "Write hello.txt", "--no-wait"])?;
    let out = child.wait_with_output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("stopped at a card"), "{}", text(&out));
    assert!(!cli.ws().join("hello.txt").exists());
    let run = cli.only_run()?;
    let show = cli.json(&["show", &run])?;
    assert_eq!(show["run"]["state"], "awaiting_approval", "{show}");
    let name = show["run"]["name"].as_str().unwrap_or_default();
    let session = name.rsplit(' ').next().unwrap_or_default().to_owned();
    let left = Command::new("pgrep")
        .args(["-f", &format!("session-id {session}")])
        .output()?;
    assert_eq!(
        left.status.code(),
        Some(1),
        "Claude Code was stopped: {}",
        text(&left)
    );

    let cards = cli.json(&["approvals"])?;
    let id = cards[0]["id"].as_str().unwrap_or_default().to_owned();
    let out = cli.strict_cmd().args(["approve", &id]).output()?;
    assert!(out.status.success(), "{}", text(&out));

    // While another process holds the session, neither a second start nor a worker runs it.
    let lock = std::fs::File::open(cli.data().join(format!("locks/claude-code-{session}.lock")))?;
    lock.try_lock()?;
    let twice = headless(&cli, &mock, &["--resume", &session])?.wait_with_output()?;
    assert!(!twice.status.success(), "{}", text(&twice));
    assert!(
        text(&twice).contains("already running under Reins"),
        "{}",
        text(&twice)
    );
    let idle = worker(&cli, &mock)?;
    assert!(idle.status.success(), "{}", text(&idle));
    assert!(!cli.ws().join("hello.txt").exists(), "{}", text(&idle));
    assert_eq!(mock.seen().len(), 1, "Claude Code was not started again");
    drop(lock);

    // The worker starts the session again; the card's decision answers the repeated call.
    let out = worker(&cli, &mock)?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.read("hello.txt")?, "hello from claude\n");
    let show = cli.json(&["show", &run])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    let told = mock.seen()[1].to_string();
    assert!(
        told.contains(reins_core::api::CLAUDE_AFTER_REVIEW),
        "{told}"
    );
    // One card, one approval, one write.
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(all.as_array().map(Vec::len), Some(1), "{all}");
    assert_eq!(reported(&cli, "tool_result")?.len(), 1);
    Ok(())
}

/// `reins worker --once` with the environment the session was started with.
fn worker(cli: &Cli, mock: &MockAnthropic) -> anyhow::Result<std::process::Output> {
    reins_with_model(cli, mock, &["worker", "--once"])
}

/// `reins ARGS…` with the environment the session was started with.
fn reins_with_model(
    cli: &Cli,
    mock: &MockAnthropic,
    args: &[&str],
) -> anyhow::Result<std::process::Output> {
    Ok(cli
        .strict_cmd()
        .args(args)
        .env("HOME", cli.tmp.path().join("home"))
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .output()?)
}

#[test]
fn every_call_of_a_headless_session_is_judged_by_reins_even_those_claude_code_lets_through(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    std::fs::write(cli.ws().join("a.txt"), "notes\n")?;
    let path = cli.ws().join("a.txt").display().to_string();
    // Claude Code runs a Read and `ls` without asking anyone: Reins' hook judges them first.
    let mock = MockAnthropic::start(vec![
        call("Reading.", "Read", json!({"file_path": path})),
        call(
            "Listing.",
            "Bash",
            json!({"command": "ls", "description": "list"}),
        ),
        say("Done."),
    ])?;
    let out =
        headless(&cli, &mock, &["--claude", "Read a.txt", "--no-wait"])?.wait_with_output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let show = cli.json(&["show", &cli.only_run()?])?;
    let steps = show["steps"].as_array().cloned().unwrap_or_default();
    let seen: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| {
            (
                s["action"]["args"]["title"].as_str().unwrap_or_default(),
                s["status"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    // The read is allowed by the policy; the command waits on a card, and Claude Code with it.
    assert_eq!(
        seen,
        [("Read", "done"), ("Bash", "awaiting_review")],
        "{show}"
    );
    assert_eq!(cli.json(&["approvals"])?.as_array().map(Vec::len), Some(1));
    Ok(())
}

#[test]
fn approving_with_drive_carries_a_stopped_session_on_at_once() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let mock = write_hello(&cli, 2)?;
    let out =
        headless(&cli, &mock, &["--claude", "Write hello.txt", "--no-wait"])?.wait_with_output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let cards = cli.json(&["approvals"])?;
    let id = cards[0]["id"].as_str().unwrap_or_default().to_owned();
    let out = reins_with_model(&cli, &mock, &["approve", &id, "--drive"])?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.read("hello.txt")?, "hello from claude\n");
    let show = cli.json(&["show", &cli.only_run()?])?;
    assert_eq!(show["run"]["state"], "succeeded", "{show}");
    assert_eq!(
        cli.json(&["approvals", "--all"])?.as_array().map(Vec::len),
        Some(1)
    );
    Ok(())
}
