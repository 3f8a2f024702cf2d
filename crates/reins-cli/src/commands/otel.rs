//! `reins otel status|flush`: the OpenTelemetry export. It is off until the standard environment
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, …), `telemetry.toml` in the config dir (the app's Settings write
//! it) or `[telemetry]` in the person's `policy.toml` names a collector; then
//! `reins worker`, `reins run`, `reins serve` and the app follow the audit log and send spans.

use clap::{Args, Subcommand};
use reins_core::api::{Reins, TelemetryHeader, TelemetrySettings, TelemetryStatus};

use crate::exit;
use crate::output::print_json;

#[derive(Subcommand)]
pub enum OtelCommand {
    /// Where the export stands: this machine's collector, and for every collector this database
    /// has sent to, its cursor in the audit log, how far behind it is, and its last error.
    Status,
    /// Send now what the collector has not taken yet, and say how much went. Exits 1 when the
    /// collector did not take it (the spans stay queued in the log, and go on the next try).
    Flush,
    /// Save where this machine sends traces (`telemetry.toml` in the config dir, as the app's
    /// Settings → Traces does). `reins worker`, `reins run`, `reins serve` and the app use it.
    Set(SetArgs),
    /// Remove the saved export. The OTEL_* environment or `[telemetry]` in your policy.toml may
    /// still turn it on; the status printed after says.
    Off,
}

#[derive(Args)]
pub struct SetArgs {
    /// The collector's base URL (`/v1/traces` is added), or its full traces URL.
    /// Example: http://localhost:6006
    pub endpoint: String,
    /// A header sent with every export: NAME=VALUE for a value that is not a credential, or
    /// NAME=PREFIX{KEY} to send the OS keyring entry KEY after PREFIX (store it first with
    /// `reins keys set KEY`). Example: --header 'authorization=Basic {langfuse}'
    #[arg(long = "header", value_name = "NAME=VALUE")]
    pub headers: Vec<String>,
    /// Also export goals, arguments, model replies and reviewers' reasons (redacted as in the
    /// audit log). Off unless given.
    #[arg(long)]
    pub content: bool,
    /// Send traces only (Jaeger, Tempo, Langfuse, Phoenix and MLflow take no metrics).
    #[arg(long)]
    pub no_metrics: bool,
    /// The `service.name` spans carry (default: reins).
    #[arg(long, value_name = "NAME")]
    pub service: Option<String>,
    /// Send over OTLP/gRPC (port 4317 by convention) instead of HTTP/protobuf (4318); the
    /// endpoint is then the collector's address, with no path.
    #[arg(long)]
    pub grpc: bool,
}

/// `NAME=VALUE`, or `NAME=PREFIX{KEY}`: a header taken from the keyring entry KEY.
fn header(arg: &str) -> reins_core::api::Result<TelemetryHeader> {
    let (name, value) = arg.split_once('=').ok_or_else(|| {
        reins_core::api::Error::Invalid(format!(
            "--header {arg:?}: write NAME=VALUE, or NAME=PREFIX{{KEY}} for a keyring entry"
        ))
    })?;
    let keyed = value
        .strip_suffix('}')
        .and_then(|v| v.rsplit_once('{'))
        .filter(|(_, key)| !key.is_empty() && !key.contains(['{', '}']));
    Ok(match keyed {
        Some((prefix, key)) => TelemetryHeader {
            name: name.trim().to_owned(),
            value: None,
            key: Some(key.to_owned()),
            prefix: prefix.to_owned(),
        },
        None => TelemetryHeader {
            name: name.trim().to_owned(),
            value: Some(value.to_owned()),
            key: None,
            prefix: String::new(),
        },
    })
}

async fn set(reins: &Reins, args: SetArgs) -> reins_core::api::Result<()> {
    let headers = args
        .headers
        .iter()
        .map(|h| header(h))
        .collect::<reins_core::api::Result<Vec<_>>>()?;
    let keys: Vec<String> = headers.iter().filter_map(|h| h.key.clone()).collect();
    reins.save_telemetry(Some(&TelemetrySettings {
        endpoint: args.endpoint,
        content: args.content,
        metrics: !args.no_metrics,
        service_name: args.service,
        grpc: args.grpc,
        headers,
    }))?;
    if keys.is_empty() {
        return Ok(());
    }
    // Saved either way: a keyring that cannot be read now is said, not taken for a failure.
    match reins.keys_status(keys).await {
        Ok(status) => {
            for k in status.iter().filter(|k| !k.set) {
                eprintln!(
                    "warning: the keyring has no entry {:?} yet: store it with `reins keys set {}`; nothing is exported until then",
                    k.name, k.name
                );
            }
        }
        Err(e) => {
            eprintln!("warning: saved, but the keyring cannot be read to check its entries: {e}")
        }
    }
    Ok(())
}

pub async fn exec(reins: &Reins, cmd: OtelCommand, json: bool) -> reins_core::api::Result<u8> {
    match cmd {
        OtelCommand::Status => {
            let status = reins.telemetry_status().await?;
            if json {
                print_json(&status);
            } else {
                print_status(&status);
            }
            Ok(exit::DONE)
        }
        OtelCommand::Set(args) => {
            set(reins, args).await?;
            let status = reins.telemetry_status().await?;
            print_status(&status);
            Ok(exit::DONE)
        }
        OtelCommand::Off => {
            reins.save_telemetry(None)?;
            let status = reins.telemetry_status().await?;
            print_status(&status);
            Ok(exit::DONE)
        }
        OtelCommand::Flush => {
            let Some(pass) = reins.telemetry_pass().await? else {
                return Err(reins_core::api::Error::Invalid(format!(
                    "export is off: set OTEL_EXPORTER_OTLP_ENDPOINT, write {} in the config dir (the app's Settings → Traces does), or add [telemetry] to your policy.toml (see docs/observability.md)",
                    reins_core::api::TELEMETRY_FILE
                )));
            };
            if json {
                print_json(&pass);
            } else if pass.held_elsewhere {
                println!(
                    "another process is exporting to this collector now (sent {} spans from {} events before it took over)",
                    pass.spans, pass.events
                );
            } else {
                println!(
                    "sent {} spans from {} events; the collector has everything up to the log's head",
                    pass.spans, pass.events
                );
            }
            Ok(exit::DONE)
        }
    }
}

fn print_status(s: &TelemetryStatus) {
    match (&s.destination, &s.source) {
        (Some(d), Some(source)) => println!(
            "export: on, to {d}{} (from {source}); content {}",
            if s.protocol == Some(reins_core::api::TelemetryProtocol::Grpc) { " over gRPC" } else { "" },
            if s.content { "on (redacted)" } else { "off" }
        ),
        _ => println!("export: off on this machine (set OTEL_EXPORTER_OTLP_ENDPOINT, write telemetry.toml in the config dir, or add [telemetry] to your policy.toml)"),
    }
    println!("audit log head: event {}", s.head);
    for c in &s.cursors {
        let lag = match c.oldest_unsent_at {
            Some(at) => format!(
                "{} events behind, the oldest from {} s ago",
                c.behind,
                (reins_core::api::now_ms() - at).max(0) / 1000
            ),
            None => "caught up".to_owned(),
        };
        println!(
            "{}: at event {}, {lag}; {} spans sent",
            c.destination, c.seq, c.spans
        );
        if let Some(holder) = &c.holder {
            println!("  exporting now: {holder}");
        }
        if let Some(e) = &c.last_error {
            println!("  last error: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::header;

    #[test]
    fn a_header_is_a_value_or_a_keyring_entry_after_a_prefix() {
        let h = |a: &str| header(a).ok().map(|h| (h.name, h.value, h.key, h.prefix));
        assert_eq!(
            h("authorization=Basic {langfuse}"),
            Some((
                "authorization".into(),
                None,
                Some("langfuse".into()),
                "Basic ".into()
            ))
        );
        assert_eq!(
            h("api_key={phoenix}"),
            Some((
                "api_key".into(),
                None,
                Some("phoenix".into()),
                String::new()
            ))
        );
        assert_eq!(
            h("x-v=4"),
            Some(("x-v".into(), Some("4".into()), None, String::new()))
        );
        assert_eq!(
            h("x-v=a{}"),
            Some(("x-v".into(), Some("a{}".into()), None, String::new()))
        );
        assert!(header("no-equals").is_err());
    }
}
