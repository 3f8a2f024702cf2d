//! An OTLP/HTTP collector for tests: it takes every request, keeps each one's path and body, and
//! decodes the spans and metrics Reins sent (the same protobuf messages its exporter encodes).

use std::collections::HashMap;

/// Each request a sink took: its path and body.
pub type Taken = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A span as a sink took it: its name, and its events' names with their attributes (`k=v`).
pub type SentSpan = (String, Vec<(String, Vec<String>)>);

/// Metrics by name: each data point's attributes (`k=v`) and value.
pub type Metrics = HashMap<String, Vec<(Vec<String>, f64)>>;

/// An OTLP/HTTP collector that takes every request and keeps each one's path and body.
pub struct Sink {
    pub port: u16,
    pub taken: Taken,
}

impl Sink {
    pub fn start() -> anyhow::Result<Self> {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let taken: Taken = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let keep = taken.clone();
        std::thread::spawn(move || {
            for sock in listener.incoming() {
                let Ok(mut sock) = sock else { return };
                let keep = keep.clone();
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 16384];
                    loop {
                        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                            match sock.read(&mut chunk) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buf[..end]).to_string();
                        let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                        let length: usize = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().to_owned())
                            })
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0);
                        while buf.len() < end + 4 + length {
                            match sock.read(&mut chunk) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let body = buf[end + 4..end + 4 + length].to_vec();
                        buf.drain(..end + 4 + length);
                        if let Ok(mut t) = keep.lock() {
                            t.push((path, body));
                        }
                        let reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                        if sock.write_all(reply).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Ok(Self { port, taken })
    }

    /// The metrics in the last request to `/v1/metrics`, by name: each data point's attributes
    /// (as `k=v` pairs) and its value (a sum's or gauge's number, a histogram's count).
    pub fn last_metrics(&self) -> anyhow::Result<Metrics> {
        use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
        use opentelemetry_proto::tonic::metrics::v1::{metric::Data, number_data_point::Value};
        use prost::Message as _;
        let taken = self.taken.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let (_, body) = taken
            .iter()
            .rev()
            .find(|(path, _)| path == "/v1/metrics")
            .ok_or_else(|| anyhow::anyhow!("no metrics were sent"))?;
        let req = ExportMetricsServiceRequest::decode(body.as_slice())?;
        let attrs = |kvs: &[opentelemetry_proto::tonic::common::v1::KeyValue]| -> Vec<String> {
            let mut v: Vec<String> = kvs.iter().map(pair).collect();
            v.sort();
            v
        };
        let number = |v: &Option<Value>| match v {
            Some(Value::AsInt(n)) => *n as f64,
            Some(Value::AsDouble(d)) => *d,
            None => f64::NAN,
        };
        let mut out: Metrics = HashMap::new();
        for rm in &req.resource_metrics {
            for sm in &rm.scope_metrics {
                for m in &sm.metrics {
                    let points: Vec<(Vec<String>, f64)> = match &m.data {
                        Some(Data::Sum(s)) => s
                            .data_points
                            .iter()
                            .map(|p| (attrs(&p.attributes), number(&p.value)))
                            .collect(),
                        Some(Data::Gauge(g)) => g
                            .data_points
                            .iter()
                            .map(|p| (attrs(&p.attributes), number(&p.value)))
                            .collect(),
                        Some(Data::Histogram(h)) => h
                            .data_points
                            .iter()
                            .map(|p| (attrs(&p.attributes), p.count as f64))
                            .collect(),
                        _ => Vec::new(),
                    };
                    out.entry(m.name.clone()).or_default().extend(points);
                }
            }
        }
        Ok(out)
    }

    /// Every span sent to `/v1/traces`, with its attributes as `k=v` (strings and integers).
    pub fn span_attributes(&self) -> anyhow::Result<Vec<(String, Vec<String>)>> {
        Ok(self
            .sent_spans()?
            .into_iter()
            .map(|span| (span.name, span.attributes.iter().map(pair).collect()))
            .collect())
    }

    /// Every span sent to `/v1/traces`: (name, its events' names with their attributes as `k=v`).
    pub fn spans(&self) -> anyhow::Result<Vec<SentSpan>> {
        Ok(self
            .sent_spans()?
            .into_iter()
            .map(|span| {
                let events = span
                    .events
                    .iter()
                    .map(|e| (e.name.clone(), e.attributes.iter().map(pair).collect()))
                    .collect();
                (span.name, events)
            })
            .collect())
    }

    /// Every span sent to `/v1/traces`, decoded.
    fn sent_spans(&self) -> anyhow::Result<Vec<opentelemetry_proto::tonic::trace::v1::Span>> {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use prost::Message as _;
        let taken = self.taken.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let mut out = Vec::new();
        for (_, body) in taken.iter().filter(|(path, _)| path == "/v1/traces") {
            let req = ExportTraceServiceRequest::decode(body.as_slice())?;
            out.extend(
                req.resource_spans
                    .into_iter()
                    .flat_map(|r| r.scope_spans)
                    .flat_map(|s| s.spans),
            );
        }
        Ok(out)
    }
}

/// An attribute as `k=v`: a string or an integer as it is, anything else as debugged.
fn pair(kv: &opentelemetry_proto::tonic::common::v1::KeyValue) -> String {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(v)) => format!("{}={v}", kv.key),
        Some(Any::IntValue(n)) => format!("{}={n}", kv.key),
        other => format!("{}={other:?}", kv.key),
    }
}
