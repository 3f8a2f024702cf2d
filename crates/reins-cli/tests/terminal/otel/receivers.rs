//! The receivers the OpenTelemetry tests send to: Arize Phoenix for traces (a real one, read back
//! through its REST API), and a sink that keeps each OTLP request (`reins_tests::otlp_sink`) for
//! the metrics, which Phoenix does not take.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use reins_tests::otlp_sink::Sink;

/// A port nothing listens on (bound, then let go).
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Phoenix, serving on `port` from a private working dir; stopped when dropped.
pub struct Phoenix {
    child: Child,
    port: u16,
    grpc_port: u16,
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
        let grpc_port = free_port()?;
        let child = Command::new(Self::program()?)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc_port.to_string())
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()?;
        let phoenix = Self {
            child,
            port,
            grpc_port,
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

    /// Where it takes OTLP over gRPC.
    pub fn grpc_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc_port)
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
