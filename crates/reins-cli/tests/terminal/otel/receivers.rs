//! The receivers the OpenTelemetry tests send to: Arize Phoenix for traces (a real one, read back
//! through its REST API), and a sink that keeps each OTLP request for the metrics, which Phoenix
//! does not take.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Each request a sink took: its path and body.
pub type Taken = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A span as a sink took it: its name, and its events' names with their attributes (`k=v`).
pub type SentSpan = (String, Vec<(String, Vec<String>)>);

/// Metrics by name: each data point's attributes (`k=v`) and value.
pub type Metrics = HashMap<String, Vec<(Vec<String>, f64)>>;

/// A port nothing listens on (bound, then let go).
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Phoenix, serving on `port` from a private working dir; stopped when dropped.
pub struct Phoenix {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn program() -> anyhow::Result<PathBuf> {
        let path = match std::env::var_os("REINS_PHOENIX") {
            Some(p) => PathBuf::from(p),
            None => {
                let base = match std::env::var_os("REINS_OTEL_DIR") {
                    Some(d) => PathBuf::from(d),
                    None => PathBuf::from(std::env::var("HOME")?).join(".cache/reins-otel"),
                };
                base.join("phoenix/bin/phoenix")
            }
        };
        anyhow::ensure!(
            path.is_file(),
            "Phoenix is not at {} (install it with scripts/phoenix)",
            path.display()
        );
        Ok(path)
    }

    pub fn start(port: u16) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let log = std::fs::File::create(dir.path().join("phoenix.log"))?;
        let child = Command::new(Self::program()?)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port()?.to_string())
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()?;
        let phoenix = Self {
            child,
            port,
            _dir: dir,
        };
        let started = Instant::now();
        while get(&format!("{}/healthz", phoenix.url())).is_err() {
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(120),
                "Phoenix did not answer on port {port} within 120 s: {}",
                std::fs::read_to_string(phoenix._dir.path().join("phoenix.log"))
                    .unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        Ok(phoenix)
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans Phoenix holds once it has stored `sent` of them (it stores what it receives a
    /// moment after answering), read again a second later: none more may arrive.
    pub fn spans_once(&self, sent: i64) -> anyhow::Result<Vec<Value>> {
        let started = Instant::now();
        while (self.spans()?.len() as i64) < sent {
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(60),
                "Phoenix holds {} spans of the {sent} sent",
                self.spans()?.len()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        std::thread::sleep(Duration::from_secs(1));
        let spans = self.spans()?;
        anyhow::ensure!(
            spans.len() as i64 == sent,
            "{sent} sent, {} stored",
            spans.len()
        );
        Ok(spans)
    }

    /// Every span Phoenix holds, through its REST API.
    pub fn spans(&self) -> anyhow::Result<Vec<Value>> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{}/v1/projects/default/spans?limit=500", self.url());
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let page: Value = serde_json::from_str(&get(&url)?)?;
            all.extend(page["data"].as_array().cloned().unwrap_or_default());
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => return Ok(all),
            }
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(url: &str) -> anyhow::Result<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let res = reqwest::get(url).await?.error_for_status()?;
        Ok(res.text().await?)
    })
}

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
        use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
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
            let mut v: Vec<String> = kvs
                .iter()
                .map(|kv| {
                    let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                        Some(Any::StringValue(s)) => s.clone(),
                        Some(Any::IntValue(n)) => n.to_string(),
                        other => format!("{other:?}"),
                    };
                    format!("{}={value}", kv.key)
                })
                .collect();
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

    /// Every span sent to `/v1/traces`: (name, its events' names with their attributes as `k=v`).
    pub fn spans(&self) -> anyhow::Result<Vec<SentSpan>> {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
        use prost::Message as _;
        let taken = self.taken.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let mut out = Vec::new();
        for (_, body) in taken.iter().filter(|(path, _)| path == "/v1/traces") {
            let req = ExportTraceServiceRequest::decode(body.as_slice())?;
            for span in req
                .resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .flat_map(|s| &s.spans)
            {
                let events = span
                    .events
                    .iter()
                    .map(|e| {
                        let attrs = e
                            .attributes
                            .iter()
                            .map(
                                |kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                                    Some(Any::StringValue(v)) => format!("{}={v}", kv.key),
                                    other => format!("{}={other:?}", kv.key),
                                },
                            )
                            .collect();
                        (e.name.clone(), attrs)
                    })
                    .collect();
                out.push((span.name.clone(), events));
            }
        }
        Ok(out)
    }
}
