//! The export, as a follower of the audit log: it reads committed events after its cursor, a page
//! at a time, builds the spans they close, sends them, and moves the cursor only once the
//! collector took them. A step never waits for it; a collector that is down costs nothing but lag,
//! and the spans go when it is back. Memory is bounded by one page. One process at a time holds a
//! destination's cursor (a lease in the store), so a span is sent once however many workers and
//! apps share the database.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
use opentelemetry_otlp::tonic_types::transport::ClientTlsConfig;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::trace::SpanExporter as _;

use super::config::{Export, HeaderValue, Protocol};
use super::metrics::{Metrics, Tally};
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
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "TelemetryPass")]
pub struct Pass {
    pub events: i64,
    pub spans: i64,
    /// Whether the cursor reached the log's head.
    pub caught_up: bool,
    /// Another process holds the export now.
    pub held_elsewhere: bool,
}

/// The spans' exporter for `export`, over HTTP/protobuf or gRPC, sending `headers` with each.
fn span_exporter(export: &Export, headers: &HashMap<String, String>) -> Result<opentelemetry_otlp::SpanExporter> {
    let built = match export.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(export.endpoint.as_str())
            .with_timeout(TIMEOUT)
            .with_headers(headers.clone())
            .build(),
        Protocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(export.endpoint.as_str())
            .with_timeout(TIMEOUT)
            .with_metadata(metadata(headers)?)
            .with_tls_config(tls())
            .build(),
    };
    built.map_err(|e| Error::Invalid(format!("telemetry export to {}: {e}", export.destination())))
}

/// The metrics' exporter to `url`.
fn metric_exporter(
    protocol: Protocol,
    url: &url::Url,
    headers: &HashMap<String, String>,
) -> Result<opentelemetry_otlp::MetricExporter> {
    let built = match protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(url.as_str())
            .with_timeout(TIMEOUT)
            .with_headers(headers.clone())
            .build(),
        Protocol::Grpc => opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .with_endpoint(url.as_str())
            .with_timeout(TIMEOUT)
            .with_metadata(metadata(headers)?)
            .with_tls_config(tls())
            .build(),
    };
    built.map_err(|e| Error::Invalid(format!("metrics export to {url}: {e}")))
}

/// The headers as gRPC metadata: lowercase ASCII names, printable values.
fn metadata(headers: &HashMap<String, String>) -> Result<MetadataMap> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let bad = |e: &dyn std::fmt::Display| Error::Invalid(format!("the telemetry header {name} cannot go over gRPC: {e}"));
        let key = reqwest::header::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()).map_err(|e| bad(&e))?;
        let value = reqwest::header::HeaderValue::from_str(value).map_err(|e| bad(&e))?;
        map.insert(key, value);
    }
    Ok(MetadataMap::from_headers(map))
}

/// TLS for an https collector, trusting the Web's roots (unused over plain http).
fn tls() -> ClientTlsConfig {
    ClientTlsConfig::new().with_enabled_roots()
}

/// One destination's exporter, bound to the store it follows.
pub struct Follower {
    store: Store,
    /// Where the prompts an export with content on sends are kept.
    blobs: crate::blob::BlobStore,
    export: Export,
    holder: String,
    exporter: opentelemetry_otlp::SpanExporter,
    metrics: Option<Metrics>,
    /// Until when this process holds the export (ms): only the holder sends metrics.
    held_until: AtomicI64,
    /// When it last sent them (ms).
    metrics_sent_at: AtomicI64,
    /// Why the last send of metrics failed, if it did.
    metrics_error: std::sync::Mutex<Option<String>>,
}

impl Follower {
    /// Builds the exporter, reading header keys from the keyring (blocking calls, off the async
    /// threads).
    pub async fn new(
        store: Store,
        blobs: crate::blob::BlobStore,
        export: Export,
        keys: std::sync::Arc<dyn SecretStore>,
    ) -> Result<Self> {
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
        let holder = format!("{}:{}", crate::worker::host_name(), std::process::id());
        // Each process's counts are a series of their own, summed by the backend.
        let mut resource = opentelemetry_sdk::Resource::builder_empty()
            .with_service_name(export.service.clone())
            .with_attribute(opentelemetry::KeyValue::new("service.instance.id", holder.clone()));
        for (k, v) in &export.resource {
            resource = resource.with_attribute(opentelemetry::KeyValue::new(k.clone(), v.clone()));
        }
        let mut exporter = span_exporter(&export, &headers)?;
        let resource = resource.build();
        exporter.set_resource(&resource);
        let metrics = match &export.metrics {
            None => None,
            Some(url) => Some(Metrics::new(metric_exporter(export.protocol, url, &headers)?, resource)),
        };
        Ok(Self {
            store,
            blobs,
            export,
            holder,
            exporter,
            metrics,
            held_until: AtomicI64::new(0),
            metrics_sent_at: AtomicI64::new(0),
            metrics_error: std::sync::Mutex::new(None),
        })
    }

    /// Sends the metrics when this process holds the export and they are due (or `now`). A
    /// collector that does not take them is logged; spans are not held up for it.
    async fn metrics_if_due(&self, now: bool) {
        let Some(m) = &self.metrics else {
            return;
        };
        let at = crate::clock::now_ms();
        let due = i64::try_from(self.export.metrics_every.as_millis()).unwrap_or(i64::MAX);
        if !now && at - self.metrics_sent_at.load(Ordering::SeqCst) < due {
            return;
        }
        // One process sends them: the export's holder (an idle one takes the lease for it).
        if at > self.held_until.load(Ordering::SeqCst) {
            let destination = self.export.destination();
            match telemetry::claim(self.store.pool(), &destination, &self.holder, at, LEASE_MS).await {
                Ok(Some(_)) => self.held_until.store(at + LEASE_MS, Ordering::SeqCst),
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "metrics were not sent");
                    return;
                }
            }
        }
        self.metrics_sent_at.store(at, Ordering::SeqCst);
        // A collector that takes only traces refuses every send: said once, not every minute.
        let failed = m.send(&self.store).await.err().map(|e| e.to_string());
        let Ok(mut last) = self.metrics_error.lock() else {
            return;
        };
        if let Some(e) = &failed {
            if last.as_ref() != Some(e) {
                tracing::warn!(error = %e, "metrics were not sent (a collector that takes only traces refuses them: OTEL_METRICS_EXPORTER=none turns them off)");
            }
        }
        *last = failed;
    }

    /// Sends what follows the cursor, a page at a time, until the head or a failure, then the
    /// metrics if they are due. A failure is recorded on the cursor (for `reins otel status`) and
    /// returned.
    pub async fn pass(&self) -> Result<Pass> {
        let pass = self.pages().await;
        self.metrics_if_due(false).await;
        pass
    }

    async fn pages(&self) -> Result<Pass> {
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
            self.held_until.store(now + LEASE_MS, Ordering::SeqCst);
            let rows = audit_read::page(pool, &Filter::default(), Some(cursor.seq), true, PAGE).await?;
            let Some(last) = rows.last().map(|r| r.seq) else {
                pass.caught_up = true;
                return Ok(pass);
            };
            let mut spans = Vec::new();
            let mut page = super::build::Page::default();
            for (i, row) in rows.iter().enumerate() {
                page.at(&rows[..i]);
                match super::build::spans_of(&self.store, row, &mut page, self.content()).await {
                    Ok(built) => spans.extend(built),
                    // The harness's own record that does not read stops the export here, said
                    // where `reins otel status` shows it; nothing after it is sent out of order.
                    Err(e) => {
                        let why = format!("stopped at event {} ({}): {e}", row.seq, row.kind);
                        telemetry::failed(pool, &destination, &self.holder, &why, crate::clock::now_ms()).await?;
                        return Err(e);
                    }
                }
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
            let tally = Tally::of(&rows, &spans)?;
            let now = crate::clock::now_ms();
            if !telemetry::advance(pool, &destination, &self.holder, cursor.seq, last, count, now, LEASE_MS).await? {
                pass.held_elsewhere = true;
                return Ok(pass);
            }
            self.held_until.store(now + LEASE_MS, Ordering::SeqCst);
            if let Some(m) = &self.metrics {
                m.add(&tally);
            }
            pass.events += rows.len() as i64;
            pass.spans += count;
        }
    }

    /// The blob store when content goes out (the prompts are read from it), else None.
    fn content(&self) -> Option<&crate::blob::BlobStore> {
        self.export.content.then_some(&self.blobs)
    }

    /// One pass, then lets go of the export (for a process that exports once and exits).
    pub async fn pass_once(&self) -> Result<Pass> {
        let pass = self.pages().await;
        self.metrics_if_due(true).await;
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
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            let _ = self.pages().await;
            self.metrics_if_due(true).await;
        })
        .await;
        let _ = telemetry::release(self.store.pool(), &self.export.destination(), &self.holder).await;
    }
}
