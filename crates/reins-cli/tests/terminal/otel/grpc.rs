//! OTLP over gRPC, into Phoenix's gRPC receiver: the same trace as over HTTP.

use std::process::Command;

use crate::common::{text, Cli};

use super::named;
use super::receivers::{free_port, Phoenix};

/// `reins` sending over gRPC to `endpoint`, traces only.
fn over_grpc(mut c: Command, endpoint: &str) -> Command {
    c.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env("OTEL_METRICS_EXPORTER", "none")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .env_remove("OTEL_SDK_DISABLED");
    c
}

#[test]
fn over_grpc_a_run_arrives_in_phoenix_as_its_trace() -> anyhow::Result<()> {
    let phoenix = Phoenix::start(free_port()?)?;
    let endpoint = phoenix.grpc_url();
    let cli = Cli::new()?;
    let plan = cli.write_plan("note", "NOTE.md")?;
    let out = over_grpc(cli.cmd(), &endpoint)
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = over_grpc(cli.cmd(), &endpoint)
        .args(["otel", "flush"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let out = over_grpc(cli.cmd(), &endpoint)
        .args(["otel", "status", "--json"])
        .output()?;
    let status: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(status["protocol"], "grpc", "{status}");
    assert_eq!(status["destination"], format!("{endpoint}/"), "{status}");
    let sent = status["cursors"][0]["spans"].as_i64().unwrap_or_default();
    assert!(sent >= 3, "{status}");
    let spans = phoenix.spans_once(sent)?;
    assert_eq!(
        named(&spans, "invoke_agent reins script").len(),
        1,
        "{spans:?}"
    );
    assert_eq!(named(&spans, "execute_tool fs.write").len(), 1, "{spans:?}");
    let trace = cli.only_run()?.replace('-', "");
    assert!(
        spans
            .iter()
            .all(|s| s["context"]["trace_id"] == trace.as_str()),
        "{spans:?}"
    );
    Ok(())
}
