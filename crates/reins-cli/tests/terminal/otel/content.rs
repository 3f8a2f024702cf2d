//! Content export of model calls: with it on, each `chat` span carries the messages the model was
//! sent and its reply, in the GenAI conventions' shape, with a secret the agent read redacted;
//! with it off, no prompt is even kept.

use serde_json::Value;

use crate::common::{text, Cli};
use crate::llm::llm_run;
use reins_tests::mock_llm::{self, MockLlm};

use super::exporting;
use super::receivers::Sink;

const SECRET: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

type Sent = Vec<(String, Vec<String>)>;

/// An LLM run that reads a file (holding `token`) and answers, exported with content on or off;
/// the spans the collector took, with their attributes.
fn run_reading(content: bool, token: &str) -> anyhow::Result<(Cli, Sink, Sent)> {
    let sink = Sink::start()?;
    let endpoint = format!("http://127.0.0.1:{}", sink.port);
    let cli = Cli::new()?;
    std::fs::write(
        cli.ws().join("TOKEN.md"),
        format!("deploy token: {token}\n"),
    )?;
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Reading the token file.",
            &[("r1", "fs_read", r#"{"path":"TOKEN.md"}"#)],
        ),
        mock_llm::text("The token file is in place.", 3),
    ])?;
    let run = llm_run(&cli, &mock, "check the deploy token file", true);
    let out = exporting(run, &endpoint, content).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = exporting(cli.strict_cmd(), &endpoint, content)
        .args(["otel", "flush"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let spans = sink.span_attributes()?;
    Ok((cli, sink, spans))
}

fn chats(spans: &Sent) -> Vec<&Vec<String>> {
    spans
        .iter()
        .filter(|(name, _)| name.starts_with("chat "))
        .map(|(_, a)| a)
        .collect()
}

/// A span's attribute `key`, read as JSON.
fn json_attr(attrs: &[String], key: &str) -> Value {
    let prefix = format!("{key}=");
    attrs
        .iter()
        .find_map(|kv| kv.strip_prefix(&prefix))
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

/// The answer the second call was sent for the file's read.
fn file_answer(input: &Value) -> String {
    input
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["parts"].as_array().into_iter().flatten())
        .find(|p| p["type"] == "tool_call_response" && p["id"] == "r1")
        .and_then(|p| p["response"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn with_content_on_each_model_call_carries_its_prompt_and_reply() -> anyhow::Result<()> {
    let (cli, _sink, spans) = run_reading(true, "rotate weekly")?;
    // Kept for the export: each model step's record names its prompt.
    let shown = cli.json(&["show", &cli.only_run()?])?;
    assert_eq!(
        shown.to_string().matches("\"prompt\"").count(),
        2,
        "{shown}"
    );
    let chats = chats(&spans);
    assert_eq!(chats.len(), 2, "{spans:?}");
    let input = |i: usize| json_attr(chats[i], "gen_ai.input.messages");
    let output = |i: usize| json_attr(chats[i], "gen_ai.output.messages");
    // The first call was asked the goal, and answered with a call to read the file.
    let first = input(0);
    assert_eq!(first[0]["role"], "system", "{first}");
    assert!(
        first.to_string().contains("check the deploy token file"),
        "{first}"
    );
    assert_eq!(
        output(0)[0]["parts"][1],
        serde_json::json!({ "type": "tool_call", "id": "r1", "name": "fs_read", "arguments": { "path": "TOKEN.md" } }),
        "{}",
        output(0)
    );
    // The second was sent the file's text as the call's answer.
    let second = input(1);
    assert!(
        file_answer(&second).contains("deploy token: rotate weekly"),
        "{second}"
    );
    assert_eq!(
        output(1)[0]["parts"][0]["content"],
        "The token file is in place."
    );
    Ok(())
}

#[test]
#[ignore = "needs a Secret Service on the session bus: scripts/test runs it under dbus-run-session"]
fn a_secret_the_agent_read_is_redacted_in_the_prompt_sent() -> anyhow::Result<()> {
    anyhow::ensure!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run this under dbus-run-session with gnome-keyring-daemon --unlock (see scripts/test)"
    );
    // Kept sealed at rest, opened for the model, and redacted before it is kept for export.
    let (_cli, sink, spans) = run_reading(true, SECRET)?;
    let chats = chats(&spans);
    assert_eq!(chats.len(), 2, "{spans:?}");
    let input = json_attr(chats[1], "gen_ai.input.messages");
    let answer = file_answer(&input);
    assert!(
        answer.contains("deploy token: ") && !answer.contains(SECRET),
        "{input}"
    );
    let taken = sink.taken.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    let needle = SECRET.as_bytes();
    assert!(
        !taken
            .iter()
            .any(|(_, body)| body.windows(needle.len()).any(|w| w == needle)),
        "a secret was exported"
    );
    Ok(())
}

#[test]
fn with_content_off_no_prompt_is_kept_or_sent() -> anyhow::Result<()> {
    let (cli, _sink, spans) = run_reading(false, "rotate weekly")?;
    let chats = chats(&spans);
    assert_eq!(chats.len(), 2, "{spans:?}");
    for attrs in &chats {
        assert!(
            !attrs
                .iter()
                .any(|kv| kv.starts_with("gen_ai.input.messages")
                    || kv.starts_with("gen_ai.output.messages")),
            "{attrs:?}"
        );
    }
    // Nor kept: the model steps' records name no prompt.
    let run = cli.only_run()?;
    let shown = cli.json(&["show", &run])?;
    let steps = shown["steps"].as_array().cloned().unwrap_or_default();
    let models = steps.iter().filter(|s| s["tool"] == "model").count();
    assert_eq!(models, 2, "{shown}");
    assert!(!shown.to_string().contains("\"prompt\""), "{shown}");
    Ok(())
}
