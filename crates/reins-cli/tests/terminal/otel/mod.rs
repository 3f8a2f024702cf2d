//! OpenTelemetry export against a real trace receiver: Arize Phoenix (from PyPI, `scripts/phoenix`),
//! started here on free ports and read back through its own REST API. A run with model calls, a
//! reviewed write and a rejected command arrives as one trace with the right parents and GenAI
//! attributes; a collector that is down for a whole run gets every span once when it is back; no
//! prompt or reason goes out unless content export is on, and never a secret.

mod content;
mod grpc;
mod receivers;
mod sources;

use std::collections::{HashMap, HashSet};
use std::process::Command;

use serde_json::Value;

use crate::common;
use crate::llm::llm_run;
use receivers::{free_port, Phoenix, Sink};

use common::{text, Cli};
use reins_tests::mock_llm::{self, MockLlm};

/// `reins` sending to `endpoint`, with content export on or off.
pub(super) fn exporting(mut c: Command, endpoint: &str, content: bool) -> Command {
    c.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env_remove("OTEL_METRICS_EXPORTER")
        .env(
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
            content.to_string(),
        )
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_SDK_DISABLED");
    c
}

/// The id of the card waiting first.
fn first_card(cli: &Cli) -> anyhow::Result<String> {
    Ok(cli.json(&["approvals"])?[0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

fn named<'a>(spans: &'a [Value], prefix: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .collect()
}

/// Checks the spans form one tree per trace: unique ids, one root, every parent present.
fn one_tree(spans: &[Value], trace: &str) -> anyhow::Result<HashMap<String, Value>> {
    let mut by_id = HashMap::new();
    for s in spans {
        assert_eq!(s["context"]["trace_id"], trace, "{s}");
        let id = s["context"]["span_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        anyhow::ensure!(
            by_id.insert(id.clone(), s.clone()).is_none(),
            "span {id} twice"
        );
    }
    let roots: Vec<&Value> = spans.iter().filter(|s| s["parent_id"].is_null()).collect();
    let names: Vec<String> = spans
        .iter()
        .map(|s| format!("{} <- {}", s["name"], s["parent_id"]))
        .collect();
    anyhow::ensure!(roots.len() == 1, "one root: {names:?}");
    for s in spans {
        if let Some(parent) = s["parent_id"].as_str() {
            anyhow::ensure!(
                by_id.contains_key(parent),
                "the parent of {} is not there",
                s["name"]
            );
        }
    }
    Ok(by_id)
}

#[test]
fn a_run_arrives_in_phoenix_as_one_trace_of_attempts_model_calls_tool_calls_and_reviews(
) -> anyhow::Result<()> {
    let phoenix = Phoenix::start(free_port()?)?;
    let cli = Cli::new()?;
    let secret_reason = "not on a Friday; token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
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
        mock_llm::calls(
            "Now clearing the old logs.",
            &[("s1", "shell_exec", r#"{"command":"rm -rf logs"}"#)],
        ),
        mock_llm::text("Left the logs alone, as asked.", 3),
    ])?;
    let endpoint = phoenix.url();
    let goal = "leave a note for on-call about the rotation";
    let out = exporting(llm_run(&cli, &mock, goal, true), &endpoint, false)
        .arg("--no-wait")
        .output()?;
    assert_eq!(
        out.status.code(),
        Some(3),
        "waits for the write's review: {}",
        text(&out)
    );
    let id = cli.only_run()?;
    let first = first_card(&cli)?;
    let out = cli.strict_cmd().args(["approve", &first]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = exporting(cli.strict_cmd(), &endpoint, false)
        .args(["worker", "--once"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let second = first_card(&cli)?;
    assert_ne!(second, first, "the command waits for its own review");
    let out = cli
        .strict_cmd()
        .args(["reject", &second, "--reason", secret_reason])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = exporting(cli.strict_cmd(), &endpoint, false)
        .args(["worker", "--once"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(mock.count(), 4);
    assert!(
        cli.ws().join("logs").exists(),
        "the rejected command did not run"
    );

    // The workers sent what they closed; `flush` sends the rest (the decisions' own events).
    let out = exporting(cli.strict_cmd(), &endpoint, false)
        .args(["otel", "flush"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    // Phoenix takes traces only: the metrics it refused are said once, and spans are not held up.
    assert!(
        text(&out).contains("OTEL_METRICS_EXPORTER=none"),
        "{}",
        text(&out)
    );
    let status = cli.json(&["otel", "status"])?;
    let cursor = &status["cursors"][0];
    assert_eq!(cursor["behind"], 0, "{status}");
    assert_eq!(cursor["seq"], status["head"], "{status}");

    let spans = phoenix.spans_once(cursor["spans"].as_i64().unwrap_or_default())?;
    let trace = id.replace('-', "");
    let by_id = one_tree(&spans, &trace)?;
    let root = named(&spans, "invoke_agent");
    assert_eq!(root.len(), 1, "{spans:?}");
    let root = root[0];
    assert_eq!(attr(root, "reins.run.state"), "succeeded");
    assert_eq!(attr(root, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(
        attr(root, "gen_ai.usage.input_tokens")
            .as_i64()
            .map(|n| n > 0),
        Some(true)
    );
    let root_id = root["context"]["span_id"].as_str().unwrap_or_default();

    let attempts = named(&spans, "attempt ");
    assert!(
        attempts.len() >= 2,
        "the run was driven in several attempts: {attempts:?}"
    );
    let attempt_ids: HashSet<&str> = attempts
        .iter()
        .map(|a| {
            assert_eq!(a["parent_id"], root_id, "{a}");
            a["context"]["span_id"].as_str().unwrap_or_default()
        })
        .collect();

    let chats = named(&spans, "chat mock-model");
    assert_eq!(chats.len(), 4, "one span per model request the server saw");
    for c in &chats {
        assert_eq!(attr(c, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(c, "gen_ai.request.model"), "mock-model");
        assert_eq!(attr(c, "gen_ai.provider.name"), "openai");
        assert_eq!(attr(c, "server.address"), "127.0.0.1");
        assert!(attr(c, "gen_ai.usage.output_tokens").is_i64(), "{c}");
        // Phoenix reads the GenAI attributes as its own: a model call.
        assert_eq!(c["span_kind"], "LLM", "{c}");
        assert!(
            attempt_ids.contains(c["parent_id"].as_str().unwrap_or_default()),
            "{c}"
        );
    }

    let tools: HashMap<&str, &Value> = named(&spans, "execute_tool ")
        .into_iter()
        .map(|s| (attr(s, "gen_ai.tool.name").as_str().unwrap_or_default(), s))
        .collect();
    for tool in ["fs.read", "fs.write", "shell.exec"] {
        let s = tools
            .get(tool)
            .ok_or_else(|| anyhow::anyhow!("no span for {tool}: {spans:?}"))?;
        assert_eq!(attr(s, "gen_ai.operation.name"), "execute_tool");
        assert!(
            attempt_ids.contains(s["parent_id"].as_str().unwrap_or_default()),
            "{s}"
        );
    }
    assert_eq!(attr(tools["fs.write"], "reins.step.status"), "done");
    assert_eq!(attr(tools["shell.exec"], "reins.step.status"), "rejected");

    let reviews = named(&spans, "review ");
    assert_eq!(reviews.len(), 2, "{reviews:?}");
    for (tool, decision) in [("fs.write", "approved"), ("shell.exec", "rejected")] {
        let r = reviews
            .iter()
            .find(|r| attr(r, "gen_ai.tool.name") == tool)
            .ok_or_else(|| anyhow::anyhow!("no review of {tool}"))?;
        assert_eq!(attr(r, "reins.review.decision"), decision, "{r}");
        assert_eq!(attr(r, "reins.review.decider"), "user", "{r}");
        assert!(attr(r, "reins.review.risk").is_string(), "{r}");
        assert!(
            attr(r, "reins.review.wait_ms")
                .as_i64()
                .is_some_and(|w| w >= 0),
            "{r}"
        );
        let parent = &by_id[r["parent_id"].as_str().unwrap_or_default()];
        assert_eq!(
            attr(parent, "gen_ai.tool.name"),
            tool,
            "a review sits under its step"
        );
    }

    // Content export is off: no goal, arguments or reason went out, let alone the secret.
    let sent = serde_json::to_string(&spans)?;
    for private in [goal, "rotate daily", "not on a Friday", "ghp_0123456789"] {
        assert!(!sent.contains(private), "{private:?} was exported");
    }
    Ok(())
}

#[test]
fn a_collector_down_for_the_whole_run_gets_every_span_once_when_it_is_back() -> anyhow::Result<()> {
    let port = free_port()?;
    let endpoint = format!("http://127.0.0.1:{port}");
    let cli = Cli::new()?;
    let plan = cli.tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        "name = \"notes\"\ngoal = \"write two notes\"\n\
         [[steps]]\ntool = \"fs.write\"\nargs = { path = \"a.txt\", content = \"first note\\n\" }\n\
         [[steps]]\ntool = \"fs.write\"\nargs = { path = \"b.txt\", content = \"second note\\n\" }\n",
    )?;
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    // Driven in three processes that all export (the collector is down for each), with two reviews.
    let out = exporting(cli.strict_cmd(), &endpoint, true)
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let first = first_card(&cli)?;
    assert!(cli
        .strict_cmd()
        .args(["approve", &first])
        .output()?
        .status
        .success());
    let out = exporting(cli.strict_cmd(), &endpoint, true)
        .args(["worker", "--once"])
        .output()?;
    assert!(
        out.status.success(),
        "the run does not wait for the collector: {}",
        text(&out)
    );
    let second = first_card(&cli)?;
    let reason = format!("not this one, it would leak {secret}");
    let out = cli
        .strict_cmd()
        .args(["reject", &second, "--reason", &reason])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = exporting(cli.strict_cmd(), &endpoint, true)
        .args(["worker", "--once"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.read("a.txt")?, "first note\n");
    assert!(!cli.ws().join("b.txt").exists());

    let status = cli.json(&["otel", "status"])?;
    let cursor = &status["cursors"][0];
    // Events that close no span are passed over; the first that does stops the cursor.
    assert_eq!(cursor["spans"], 0, "nothing was taken: {status}");
    assert!(cursor["behind"].as_i64().is_some_and(|b| b > 0), "{status}");
    assert!(
        cursor["lastError"].as_str().is_some_and(|e| !e.is_empty()),
        "{status}"
    );
    let out = exporting(cli.cmd(), &endpoint, true)
        .args(["otel", "flush"])
        .output()?;
    assert_eq!(
        out.status.code(),
        Some(1),
        "nothing to send to: {}",
        text(&out)
    );
    assert!(text(&out).contains("did not take"), "{}", text(&out));

    let phoenix = Phoenix::start(port)?;
    let out = exporting(cli.cmd(), &endpoint, true)
        .args(["otel", "flush", "--json"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let pass: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        pass["heldElsewhere"], false,
        "a failed flush let go of the export: {pass}"
    );
    let sent = pass["spans"].as_i64().unwrap_or_default();
    let again = exporting(cli.cmd(), &endpoint, true)
        .args(["otel", "flush", "--json"])
        .output()?;
    let again: Value = serde_json::from_slice(&again.stdout)?;
    assert_eq!(again["spans"], 0, "nothing is sent twice: {again}");

    // Every span sent once, and all of them stored.
    let spans = phoenix.spans_once(sent)?;
    one_tree(&spans, &cli.only_run()?.replace('-', ""))?;
    assert_eq!(named(&spans, "invoke_agent").len(), 1);
    assert_eq!(named(&spans, "execute_tool fs.write").len(), 2);
    assert_eq!(named(&spans, "review fs.write").len(), 2);
    assert!(named(&spans, "attempt ").len() >= 2);
    // Content export is on: the goal, the arguments, the diff and the person's reason went out,
    // the secret in the reason redacted.
    let sent = serde_json::to_string(&spans)?;
    assert!(sent.contains("write two notes"), "the goal");
    assert!(sent.contains("second note"), "the arguments");
    assert!(
        sent.contains("+second note"),
        "the diff the person reviewed"
    );
    assert!(sent.contains("not this one, it would leak"), "the reason");
    assert!(!sent.contains(secret), "a secret was exported");
    Ok(())
}

#[test]
fn metrics_count_runs_reviews_decisions_and_tokens_beside_the_spans() -> anyhow::Result<()> {
    let sink = Sink::start()?;
    let endpoint = format!("http://127.0.0.1:{}", sink.port);
    let cli = Cli::new()?;
    let mock = MockLlm::start(vec![
        mock_llm::calls(
            "Writing the note.",
            &[(
                "w1",
                "fs_write",
                r#"{"path":"docs/NOTE.md","content":"rotate daily\n"}"#,
            )],
        ),
        mock_llm::calls(
            "Now clearing the old logs.",
            &[("s1", "shell_exec", r#"{"command":"rm -rf logs"}"#)],
        ),
        mock_llm::text("Left the logs alone.", 3),
    ])?;
    // Driven with export off: the one `flush` below counts the whole run.
    let out = llm_run(&cli, &mock, "leave a note", true)
        .arg("--no-wait")
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let first = first_card(&cli)?;
    assert!(cli
        .strict_cmd()
        .args(["approve", &first])
        .output()?
        .status
        .success());
    assert!(cli
        .strict_cmd()
        .args(["worker", "--once"])
        .output()?
        .status
        .success());
    let second = first_card(&cli)?;
    assert!(cli
        .strict_cmd()
        .args(["reject", &second, "--reason", "no"])
        .output()?
        .status
        .success());
    assert!(cli
        .strict_cmd()
        .args(["worker", "--once"])
        .output()?
        .status
        .success());

    let out = exporting(cli.strict_cmd(), &endpoint, false)
        .args(["otel", "flush"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let m = sink.last_metrics()?;
    let value = |name: &str, attrs: &[&str]| -> f64 {
        m.get(name)
            .into_iter()
            .flatten()
            .filter(|(a, _)| attrs.iter().all(|want| a.iter().any(|have| have == want)))
            .map(|(_, v)| *v)
            .sum()
    };
    assert_eq!(
        value("reins.runs", &["reins.run.state=succeeded"]),
        1.0,
        "{m:?}"
    );
    assert_eq!(value("reins.reviews.waiting", &[]), 0.0, "{m:?}");
    assert_eq!(
        value(
            "reins.decisions",
            &["reins.decision.source=review", "reins.decision=approved"]
        ),
        1.0,
        "{m:?}"
    );
    assert_eq!(
        value(
            "reins.decisions",
            &["reins.decision.source=review", "reins.decision=rejected"]
        ),
        1.0,
        "{m:?}"
    );
    assert!(
        value(
            "reins.decisions",
            &["reins.decision.source=policy", "reins.decision=ask"]
        ) >= 2.0,
        "{m:?}"
    );
    assert_eq!(
        value("reins.review.wait", &[]),
        2.0,
        "two reviews waited: {m:?}"
    );
    let input = value(
        "reins.tokens",
        &["gen_ai.agent.name=reins llm", "gen_ai.token.type=input"],
    );
    let output = value(
        "reins.tokens",
        &["gen_ai.agent.name=reins llm", "gen_ai.token.type=output"],
    );
    assert!(input > 0.0 && output > 0.0, "{m:?}");
    // The spans went to the same collector, beside them.
    let traces = sink
        .taken
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .iter()
        .filter(|(p, _)| p == "/v1/traces")
        .count();
    assert!(traces >= 1);
    Ok(())
}

#[test]
fn what_the_sandbox_blocked_is_an_event_on_its_step() -> anyhow::Result<()> {
    let sink = Sink::start()?;
    let endpoint = format!("http://127.0.0.1:{}", sink.port);
    let cli = Cli::new()?;
    let policy = cli.tmp.path().join("allow-shell.toml");
    std::fs::write(
        &policy,
        "[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\n",
    )?;
    let plan = cli.tmp.path().join("reach.toml");
    std::fs::write(
        &plan,
        "name = \"reach\"\ngoal = \"a build that over-reaches\"\n\
         [[steps]]\ntool = \"shell.exec\"\n\
         args = { command = \"echo built > built.txt; mkdir -p .claude && echo x > .claude/settings.json; true\" }\n",
    )?;
    // It writes to a protected path: a person reviews it, and approves.
    let out = cli
        .cmd()
        .env("REINS_POLICY", &policy)
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let id = first_card(&cli)?;
    let out = cli
        .cmd()
        .env("REINS_POLICY", &policy)
        .args(["approve", &id, "--drive"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cli.read("built.txt")?, "built\n");
    assert!(!cli.ws().join(".claude").exists());
    let out = exporting(cli.cmd(), &endpoint, false)
        .args(["otel", "flush"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let spans = sink.spans()?;
    let (_, events) = spans
        .iter()
        .find(|(name, _)| name == "execute_tool shell.exec")
        .ok_or_else(|| anyhow::anyhow!("no span for the command: {spans:?}"))?;
    let blocked: Vec<&Vec<String>> = events
        .iter()
        .filter(|(name, _)| name == "reins.containment.blocked")
        .map(|(_, attrs)| attrs)
        .collect();
    assert!(
        blocked.iter().any(|a| a
            .iter()
            .any(|kv| kv.starts_with("reins.blocked=") && kv.contains("tried to create .claude"))),
        "{events:?}"
    );
    Ok(())
}
