//! The export, as a follower of the audit log: it reads committed events after its cursor, a page
//! at a time, builds the spans they close, sends them, and moves the cursor only once the
//! collector took them. A step never waits for it; a collector that is down costs nothing but lag,
//! and the spans go when it is back. Memory is bounded by one page. One process at a time holds a
//! destination's cursor (a lease in the store), so a span is sent once however many workers and
//! apps share the database.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::SpanExporter as _;

use super::config::{Export, HeaderValue};
use crate::error::{Error, Result};
use crate::event::Filter;
use crate::keys::SecretStore;
use crate::store::{audit_read, telemetry, Store};

/// Events read per page.
const PAGE: i64 = 200;
/// How long a holder keeps the export without renewing it.
const LEASE_MS: i64 = 30_000;
/// How long one send may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    pub events: i64,
    pub spans: i64,
    /// Whether the cursor reached the log's head.
    pub caught_up: bool,
    /// Another process holds the export now.
    pub held_elsewhere: bool,
}

/// One destination's exporter, bound to the store it follows.
pub struct Follower {
    store: Store,
    export: Export,
    holder: String,
    exporter: opentelemetry_otlp::SpanExporter,
}

impl Follower {
    /// Builds the exporter, reading header keys from the keyring (blocking calls, off the async
    /// threads).
    pub async fn new(store: Store, export: Export, keys: std::sync::Arc<dyn SecretStore>) -> Result<Self> {
        let mut headers = HashMap::new();
        for (name, value) in &export.headers {
            let value = match value {
                HeaderValue::Plain(v) => v.clone(),
                HeaderValue::Keyring { key, prefix } => {
                    let secret = crate::keys::get_blocking(keys.clone(), key).await?.ok_or_else(|| {
                        Error::Invalid(format!(
                            "the telemetry header {name} names the key {key:?}, which is not in the keyring (`reins keys set {key}`)"
                        ))
                    })?;
                    format!("{prefix}{}", secret.expose())
                }
            };
            headers.insert(name.clone(), value);
        }
        let mut resource = opentelemetry_sdk::Resource::builder_empty()
            .with_service_name(export.service.clone());
        for (k, v) in &export.resource {
            resource = resource.with_attribute(opentelemetry::KeyValue::new(k.clone(), v.clone()));
        }
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(export.endpoint.as_str())
            .with_timeout(TIMEOUT)
            .with_headers(headers)
            .build()
            .map_err(|e| Error::Invalid(format!("telemetry export to {}: {e}", export.destination())))?;
        exporter.set_resource(&resource.build());
        Ok(Self {
            store,
            export,
            holder: format!("{}:{}", crate::worker::host_name(), std::process::id()),
            exporter,
        })
    }

    /// Sends what follows the cursor, a page at a time, until the head or a failure. A failure is
    /// recorded on the cursor (for `reins otel status`) and returned.
    pub async fn pass(&self) -> Result<Pass> {
        let destination = self.export.destination();
        let pool = self.store.pool();
        let mut pass = Pass::default();
        loop {
            // Nothing new: no claim, so an idle follower never writes.
            if telemetry::seq(pool, &destination).await? >= audit_read::max_seq(pool).await? {
                pass.caught_up = true;
                return Ok(pass);
            }
            let now = crate::clock::now_ms();
            let Some(cursor) = telemetry::claim(pool, &destination, &self.holder, now, LEASE_MS).await? else {
                pass.held_elsewhere = true;
                return Ok(pass);
            };
            let rows = audit_read::page(pool, &Filter::default(), Some(cursor.seq), true, PAGE).await?;
            let Some(last) = rows.last().map(|r| r.seq) else {
                pass.caught_up = true;
                return Ok(pass);
            };
            let mut spans = Vec::new();
            let mut page = super::build::Page::default();
            for (i, row) in rows.iter().enumerate() {
                page.at(&rows[..i]);
                spans.extend(super::build::spans_of(&self.store, row, &mut page, self.export.content).await?);
            }
            let count = spans.len() as i64;
            if !spans.is_empty() {
                let data = spans.iter().map(super::span::Span::to_data).collect();
                if let Err(e) = self.exporter.export(data).await {
                    let context = format!("the collector at {destination} did not take {count} spans");
                    let why = format!("{context}: {e}");
                    telemetry::failed(pool, &destination, &self.holder, &why, crate::clock::now_ms()).await?;
                    return Err(Error::Io {
                        context,
                        source: std::io::Error::other(e.to_string()),
                    });
                }
            }
            let now = crate::clock::now_ms();
            if !telemetry::advance(pool, &destination, &self.holder, cursor.seq, last, count, now, LEASE_MS).await? {
                pass.held_elsewhere = true;
                return Ok(pass);
            }
            pass.events += rows.len() as i64;
            pass.spans += count;
        }
    }

    /// One pass, then lets go of the export (for a process that exports once and exits).
    pub async fn pass_once(&self) -> Result<Pass> {
        let pass = self.pass().await;
        telemetry::release(self.store.pool(), &self.export.destination(), &self.holder).await?;
        pass
    }

    /// Follows the log until `stop` fires: a pass whenever the log may have grown (every `every`),
    /// waiting longer after each failure (up to a minute). At the end, one last pass (two seconds
    /// at most: a collector that is down does not hold up the face's exit), then it lets go of
    /// the export.
    pub async fn follow(&self, every: Duration, mut stop: tokio::sync::watch::Receiver<bool>) {
        let mut wait = every;
        loop {
            match self.pass().await {
                Ok(_) => wait = every,
                Err(e) => {
                    tracing::warn!(error = %e, "telemetry export failed; trying again later");
                    wait = (wait * 2).min(Duration::from_secs(60));
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => break,
            }
            if *stop.borrow() {
                break;
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), self.pass()).await;
        let _ = telemetry::release(self.store.pool(), &self.export.destination(), &self.holder).await;
    }
}
