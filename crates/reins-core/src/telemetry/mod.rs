//! OpenTelemetry export: runs, attempts, steps, model calls, tool calls and reviews as spans with
//! the GenAI semantic conventions, sent over OTLP/HTTP to a collector the person names. Off by
//! default. Built from the committed audit log by a follower with its own cursor, so it can neither
//! slow a step nor lose a span; ids derive from the run and step, so a span sent twice is one span.

pub mod build;
pub mod config;
pub mod follower;
pub mod ids;
pub mod messages;
pub mod metrics;
pub mod span;

pub use config::{Export, TELEMETRY_FILE};
pub use follower::{Follower, Pass};

use serde::Serialize;

use crate::error::Result;
use crate::store::{audit_read, telemetry, Store};

/// Where the export stands, for `reins otel status`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The traces endpoint this machine exports to (None: export is off here).
    pub destination: Option<String>,
    /// What turned it on.
    pub source: Option<String>,
    /// "http/protobuf" or "grpc" (None: export is off here).
    pub protocol: Option<config::Protocol>,
    pub content: bool,
    /// The audit log's last event.
    pub head: i64,
    pub cursors: Vec<Cursor>,
}

/// One destination's cursor and its lag.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "TelemetryCursor")]
pub struct Cursor {
    pub destination: String,
    /// The last event whose spans the collector took.
    pub seq: i64,
    /// Events after it.
    pub behind: i64,
    /// When the oldest of those was committed (Unix ms).
    pub oldest_unsent_at: Option<i64>,
    pub spans: i64,
    /// The process exporting now, while its lease runs.
    pub holder: Option<String>,
    pub last_error: Option<String>,
    pub last_error_at: Option<i64>,
}

/// The status of every destination this database has exported to, and of this machine's.
pub async fn status(store: &Store, export: Option<&Export>) -> Result<Status> {
    let pool = store.pool();
    let head = audit_read::max_seq(pool).await?;
    let now = crate::clock::now_ms();
    let mut cursors = Vec::new();
    for c in telemetry::all(pool).await? {
        let oldest = audit_read::earliest_after(pool, c.seq).await?.map(|(_, at)| at);
        cursors.push(Cursor {
            behind: (head - c.seq).max(0),
            oldest_unsent_at: oldest,
            holder: c.holder.filter(|_| c.lease_until > now),
            destination: c.destination,
            seq: c.seq,
            spans: c.spans,
            last_error: c.last_error,
            last_error_at: c.last_error_at,
        });
    }
    Ok(Status {
        destination: export.map(Export::destination),
        source: export.map(|e| e.source.clone()),
        protocol: export.map(|e| e.protocol),
        content: export.is_some_and(|e| e.content),
        head,
        cursors,
    })
}
