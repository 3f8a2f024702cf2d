//! `reins otel status|flush`: the OpenTelemetry export. It is off until the standard environment
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, …), `telemetry.toml` in the config dir (the app's Settings write
//! it) or `[telemetry]` in the person's `policy.toml` names a collector; then
//! `reins worker`, `reins run`, `reins serve` and the app follow the audit log and send spans.

use clap::Subcommand;
use reins_core::api::{Reins, TelemetryStatus};

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
            "export: on, to {d} (from {source}); content {}",
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
