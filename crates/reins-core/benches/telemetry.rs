//! Benchmark: what OpenTelemetry export costs a run's steps.
//!
//! The same script run of N durable `fs.write` steps (intent, fsynced file write, confirm,
//! checkpoint, audit), driven with export off and with export on, in interleaved rounds in one
//! process on the same disk. With export on, a follower sends spans as the steps commit, every
//! 200 ms, to an OTLP/HTTP collector in this process that takes every request (it reads the
//! body and answers 200). Printed: steps/s per round, the medians, and the ratio on/off (the
//! goal: at least 0.95×), and how many spans the collector took (all of them, or the figure means
//! nothing).
//!
//! `cargo bench -p reins-core --bench telemetry [-- STEPS ROUNDS]` (defaults 300 steps, 5 rounds).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/alloc.rs"]
mod alloc;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use reins_core::api::{DataDir, Options, Plan, Reins};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

#[path = "support/steps.rs"]
#[allow(dead_code)]
mod steps;
use steps::{content, Stopwatch};

#[path = "support/permit_all.rs"]
mod permit_all;
use permit_all::PermitAll;

fn plan(steps: usize) -> Plan {
    let steps: Vec<serde_json::Value> = (0..steps)
        .map(|i| {
            serde_json::json!({
                "tool": "fs.write",
                "args": { "path": format!("conf/{i}.conf"), "content": content(i) },
                "why": "benchmark",
            })
        })
        .collect();
    let text = serde_json::json!({ "name": "bench", "goal": "measure", "steps": steps });
    Plan::from_json(&text.to_string()).unwrap()
}

/// An OTLP/HTTP collector that takes every request: reads the headers and the body, answers 200.
/// Counts the requests it took.
async fn collector(requests: Arc<AtomicUsize>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let requests = requests.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 16384];
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < end + 4 + length {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..end + 4 + length);
                    requests.fetch_add(1, Ordering::SeqCst);
                    let reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if sock.write_all(reply).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// One round: steps/s, and the spans the follower sent.
async fn round(steps: usize, export: Option<u16>) -> (f64, i64) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    // The process environment is what turns export on; this bench sets it per round, before
    // anything reads it.
    match export {
        Some(port) => std::env::set_var(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        ),
        None => std::env::remove_var("OTEL_EXPORTER_OTLP_ENDPOINT"),
    }
    let options = Options {
        lease_ms: 30_000,
        policy: Some(Arc::new(PermitAll)),
        ..Options::default()
    };
    let reins = Reins::open(DataDir::at(dir.path()), options).await.unwrap();
    let follower = reins.follow_telemetry().await.unwrap();
    assert_eq!(follower.is_some(), export.is_some());
    let quiet = Stopwatch(Mutex::new(Vec::new()));
    let run = reins.create_run(&plan(steps), &ws, &quiet).await.unwrap();
    let watch = Stopwatch(Mutex::new(Vec::new()));
    let start = Instant::now();
    reins.drive(run, &watch).await.unwrap();
    let per_s = steps as f64 / start.elapsed().as_secs_f64();
    if let Some(f) = follower {
        f.stop().await;
    }
    let spans = match export {
        Some(_) => {
            // What the follower left (at most its last page) goes now; then all was sent.
            let pass = reins.telemetry_pass().await.unwrap();
            let status = reins.telemetry_status().await.unwrap();
            assert!(pass.is_some());
            assert_eq!(status.cursors[0].behind, 0, "everything was sent");
            status.cursors[0].spans
        }
        None => 0,
    };
    reins.close().await;
    (per_s, spans)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let steps: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(300);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let config = tempfile::tempdir().unwrap();
    std::env::set_var("REINS_CONFIG_DIR", config.path());
    std::env::set_var("OTEL_BSP_SCHEDULE_DELAY", "200");
    for var in ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"] {
        std::env::remove_var(var);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let requests = Arc::new(AtomicUsize::new(0));
        let port = collector(requests.clone()).await;
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for r in 1..=rounds {
            let (a, _) = round(steps, None).await;
            let (b, spans) = round(steps, Some(port)).await;
            println!(
                "round {r}: export off {a:.1} steps/s, on {b:.1} steps/s ({spans} spans sent)"
            );
            // The run, its attempt, and one span per step.
            assert_eq!(spans, steps as i64 + 2, "every span was sent");
            off.push(a);
            on.push(b);
        }
        let (m_off, m_on) = (median(&mut off), median(&mut on));
        println!("export off: median {m_off:.1} steps/s");
        println!(
            "export on:  median {m_on:.1} steps/s (the collector took {} requests)",
            requests.load(Ordering::SeqCst)
        );
        println!("ratio on/off: {:.3}x (goal >= 0.95x)", m_on / m_off);
    });
}
