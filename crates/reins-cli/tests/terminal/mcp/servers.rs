//! Servers that misbehave or change: crashes, hangs, a crash after a call, changed tools, one that
//! never comes up, odd results, and a server over streamable HTTP.

use super::{add_fixture, fixture_rules, llm_run, with_policy};
use crate::acp::agents_bin;
use crate::common::{text, Cli};
use reins_tests::mock_llm::{self, MockLlm};

#[test]
fn a_server_that_crashes_or_hangs_is_a_clear_error_and_the_run_goes_on() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let state = cli.tmp.path().join("fixture");
    add_fixture(&cli, &state)?;
    let mock = MockLlm::start(vec![
        mock_llm::calls("Crashing it.", &[("c1", "fixture__crash", "{}")]),
        mock_llm::calls("Hanging it.", &[("h1", "fixture__hang", "{}")]),
        mock_llm::calls("Nonsense now.", &[("g1", "fixture__garbage", "{}")]),
        mock_llm::calls(
            "Echo now.",
            &[("e1", "fixture__echo", r#"{"text":"still here"}"#)],
        ),
        mock_llm::text("Done.", 3),
    ])?;
    let mut c = llm_run(&cli, &mock, "poke the fixture", "fixture");
    with_policy(&cli, &mut c, fixture_rules())?;
    let out = c.output()?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "the run finished: {}",
        text(&out)
    );
    assert_eq!(mock.count(), 5);
    let crashed = &mock_llm::tool_results(&mock.seen()[1])[0].1;
    assert!(
        crashed.contains("the MCP server `fixture` failed on `crash`")
            && crashed.contains("crashing on purpose"),
        "the model hears what happened, with the server's last words: {crashed}"
    );
    let last = |n: usize| {
        mock_llm::tool_results(&mock.seen()[n])
            .last()
            .map(|r| r.1.clone())
            .unwrap_or_default()
    };
    let hung = &last(2);
    assert!(hung.contains("did not answer `hang` within 3 s"), "{hung}");
    let garbled = &last(3);
    assert!(
        garbled.contains("the MCP server `fixture`") && garbled.contains("`garbage`"),
        "an answer that is not MCP is an error the model hears: {garbled}"
    );
    let echoed = &last(4);
    assert!(
        echoed.contains("echo: still here"),
        "started again: {echoed}"
    );
    let calls = std::fs::read_to_string(state.join("calls.log"))?;
    assert_eq!(calls.lines().count(), 4, "each call was sent once: {calls}");
    Ok(())
}

#[test]
fn a_crash_after_an_mcp_call_is_an_unknown_outcome_a_person_settles() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let state = cli.tmp.path().join("fixture");
    add_fixture(&cli, &state)?;
    let mock = MockLlm::start(vec![
        mock_llm::calls("Echo.", &[("e1", "fixture__echo", r#"{"text":"once"}"#)]),
        mock_llm::text("Done.", 3),
    ])?;
    let mut c = llm_run(&cli, &mock, "echo once", "fixture");
    with_policy(&cli, &mut c, fixture_rules())?;
    let crashed = c.env("REINS_FAULT", "after_effect").output()?;
    assert_eq!(crashed.status.code(), None, "aborted: {}", text(&crashed));

    let mut worker = cli.strict_cmd();
    with_policy(&cli, &mut worker, fixture_rules())?;
    let out = worker.args(["worker", "--once"]).output()?;
    assert!(text(&out).contains("reins resolve"), "{}", text(&out));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended", "{show}");
    assert_eq!(show["intents"][0]["status"], "unknown", "{show}");
    let intent = show["intents"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    let out = cli
        .strict_cmd()
        .args(["resolve", &intent, "--done", "--note", "it echoed"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let mut worker = cli.strict_cmd();
    with_policy(&cli, &mut worker, fixture_rules())?;
    let out = worker.args(["worker", "--once"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.json(&["show", &id])?["run"]["state"], "succeeded");
    let calls = std::fs::read_to_string(state.join("calls.log"))?;
    assert_eq!(calls.lines().count(), 1, "never sent twice: {calls}");
    Ok(())
}

#[test]
fn a_server_whose_tools_changed_between_attempts_suspends_the_run() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let state = cli.tmp.path().join("fixture");
    add_fixture(&cli, &state)?;
    let mock = MockLlm::start(vec![
        mock_llm::calls("Echo.", &[("e1", "fixture__echo", r#"{"text":"x"}"#)]),
        mock_llm::text("Done.", 3),
    ])?;
    let out = llm_run(&cli, &mock, "echo", "fixture")
        .arg("--no-wait")
        .output()?;
    assert_eq!(
        out.status.code(),
        Some(3),
        "waits for a review: {}",
        text(&out)
    );
    std::fs::write(state.join("extra-tool"), "surprise")?;
    let approval = cli.json(&["approvals"])?[0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(cli
        .strict_cmd()
        .args(["approve", &approval])
        .output()?
        .status
        .success());
    let out = cli.strict_cmd().args(["worker", "--once"]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended", "{show}");
    let why = show["run"]["lastError"].as_str().unwrap_or_default();
    assert!(
        why.contains("the tools of the MCP server `fixture` changed"),
        "{why}"
    );
    assert!(!state.join("calls.log").exists(), "nothing was called");
    Ok(())
}

/// The reference "everything" server from npm, for the shapes a result takes: a large one becomes
/// an artifact, an image is named (a text model is not shown it), a slow tool times out, and the
/// server sees only the environment Reins gives it.
#[test]
fn odd_results_from_the_everything_server_reach_the_model_in_a_form_it_can_use(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let program = agents_bin("mcp-server-everything")?.join("mcp-server-everything");
    let out = cli
        .strict_cmd()
        .args(["mcp", "add", "ev", "--timeout", "2", "--"])
        .arg(program)
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let big = "x".repeat(20_000);
    let echo = serde_json::json!({"message": big}).to_string();
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Trying its tools.",
            &[
                ("a", "ev__echo", &echo),
                ("b", "ev__get-tiny-image", "{}"),
                (
                    "c",
                    "ev__trigger-long-running-operation",
                    r#"{"duration":8,"steps":2}"#,
                ),
                ("d", "ev__get-env", "{}"),
            ],
        ),
        mock_llm::text("Done.", 3),
    ])?;
    let mut c = llm_run(&cli, &mock, "try the everything server", "ev");
    with_policy(
        &cli,
        &mut c,
        "[[rules]]\ndecision = \"allow\"\nserver = \"ev\"\n",
    )?;
    let out = c.env("REINS_TEST_PRIVATE", "not-for-servers").output()?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let results = mock_llm::tool_results(&mock.seen()[1]);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        results[0].1.len() < 12_000 && results[0].1.contains("artifact"),
        "a large result reaches the model as an excerpt of the artifact: {}",
        &results[0].1[..200.min(results[0].1.len())]
    );
    assert!(
        results[1].1.contains("[image image/png"),
        "{}",
        results[1].1
    );
    assert!(results[2].1.contains("did not answer"), "{}", results[2].1);
    assert!(results[3].1.contains("PATH"), "{}", results[3].1);
    assert!(
        !results[3].1.contains("not-for-servers"),
        "only the base environment: {}",
        results[3].1
    );
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    let steps = show["steps"].as_array().cloned().unwrap_or_default();
    let echo_step = steps
        .iter()
        .find(|s| s["tool"] == "mcp.call")
        .cloned()
        .unwrap_or_default();
    let kept = echo_step["result"].as_str().map_or(0, str::len);
    assert!(
        kept >= 20_000,
        "the whole result is kept in the journal: {kept} bytes"
    );
    Ok(())
}

#[test]
fn a_server_that_does_not_come_up_is_retried_under_the_budget_and_a_missing_one_is_not(
) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let state = cli.tmp.path().join("fixture");
    add_fixture(&cli, &state)?;
    std::fs::write(state.join("die-at-start"), "")?;
    let mock = MockLlm::start(vec![mock_llm::text("Nothing to do.", 3)])?;
    let out = llm_run(&cli, &mock, "echo", "fixture")
        .args(["--retry-max", "1"])
        .output()?;
    let shown = text(&out);
    assert!(shown.contains("retry 1 of 1"), "retried once: {shown}");
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "suspended", "{show}");
    let why = show["run"]["lastError"].as_str().unwrap_or_default();
    assert!(
        why.contains("retry budget exhausted") && why.contains("not coming up today"),
        "{why}"
    );
    assert_eq!(
        mock.count(),
        0,
        "the model was never asked without its tools"
    );

    // A program that does not exist will not appear by waiting: a person is asked at once.
    let out = cli
        .strict_cmd()
        .args(["mcp", "add", "gone", "--", "/nonexistent/mcp-server"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = llm_run(&cli, &mock, "echo", "gone").output()?;
    let shown = text(&out);
    assert!(!shown.contains("retry 1"), "not retried: {shown}");
    assert!(shown.contains("could not be started"), "{shown}");
    Ok(())
}

/// A server reached over streamable HTTP (`--url`): the everything server in its HTTP mode.
#[test]
fn a_server_over_streamable_http_is_called_like_one_reins_starts() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let program = agents_bin("mcp-server-everything")?.join("mcp-server-everything");
    let mut server = std::process::Command::new(program)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let result = (|| -> anyhow::Result<()> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "the HTTP server did not listen"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let url = format!("http://127.0.0.1:{port}/mcp");
        let out = cli
            .strict_cmd()
            .args(["mcp", "add", "web", "--url", &url])
            .output()?;
        assert!(out.status.success(), "{}", text(&out));
        let listed = cli.json(&["mcp", "list"])?;
        assert_eq!(listed[0]["transport"], "http", "{listed}");
        let mock = MockLlm::start(vec![
            mock_llm::calls("Adding.", &[("s1", "web__get-sum", r#"{"a":2,"b":3}"#)]),
            mock_llm::text("5.", 3),
        ])?;
        let mut c = llm_run(&cli, &mock, "add 2 and 3", "web");
        with_policy(
            &cli,
            &mut c,
            "[[rules]]\ndecision = \"allow\"\nserver = \"web\"\n",
        )?;
        let out = c.output()?;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let results = mock_llm::tool_results(&mock.seen()[1]);
        assert!(results[0].1.contains('5'), "{results:?}");
        Ok(())
    })();
    let _ = server.kill();
    let _ = server.wait();
    result
}
