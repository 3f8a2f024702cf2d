//! `mock-llm SCRIPT.json`: a scripted OpenAI-compatible server for demos and manual tests. Prints
//! its base URL, then serves each request the next reply of the script (streamed slowly enough to
//! watch) until it is stopped.
//!
//! The script is a JSON array; each reply is `{"say": "text", "calls": [{"name": "fs_read",
//! "arguments": {"path": "…"}}]}` (both optional; no calls: a final answer).

use std::time::Duration;

use reins_tests::mock_llm::{self, MockLlm, Reply};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    #[serde(default)]
    say: String,
    #[serde(default)]
    calls: Vec<Call>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    name: String,
    #[serde(default)]
    arguments: serde_json::Value,
}

fn main() -> anyhow::Result<()> {
    let Some(path) = std::env::args().nth(1) else {
        anyhow::bail!("usage: mock-llm SCRIPT.json (see examples/llm/)");
    };
    let text =
        std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("cannot read {path}: {e}"))?;
    let steps: Vec<Step> =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
    let replies = steps
        .iter()
        .enumerate()
        .map(|(n, s)| {
            if s.calls.is_empty() {
                slow(mock_llm::text(&s.say, 3))
            } else {
                let args: Vec<(String, String, String)> = s
                    .calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        (
                            format!("call_{n}_{i}"),
                            c.name.clone(),
                            c.arguments.to_string(),
                        )
                    })
                    .collect();
                let refs: Vec<(&str, &str, &str)> = args
                    .iter()
                    .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
                    .collect();
                slow(mock_llm::calls(&s.say, &refs))
            }
        })
        .collect();
    let mock = MockLlm::start(replies)?;
    println!("{}", mock.base_url());
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Streams a little slower, so the text is seen arriving.
fn slow(reply: Reply) -> Reply {
    match reply {
        Reply::Stream { chunks, .. } => Reply::Stream { chunks, gap_ms: 15 },
        other => other,
    }
}
