//! `mock-anthropic SCRIPT.json`: a scripted Anthropic Messages server for driving the real Claude
//! Code by hand, offline (`ANTHROPIC_BASE_URL=URL claude …`). Prints its base URL, then serves each
//! request that offers tools the next turn of the script until it is stopped.
//!
//! The script is a JSON array of turns: `{"say": "text", "tool": "Write", "input": {…}}` (no
//! `tool`: the model ends its turn).

use reins_tests::mock_anthropic::{MockAnthropic, Turn};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    #[serde(default)]
    say: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    input: serde_json::Value,
}

fn main() -> anyhow::Result<()> {
    let Some(path) = std::env::args().nth(1) else {
        anyhow::bail!("usage: mock-anthropic SCRIPT.json");
    };
    let text =
        std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("cannot read {path}: {e}"))?;
    let steps: Vec<Step> =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
    let script = steps
        .into_iter()
        .map(|s| Turn {
            text: s.say,
            tool: s.tool.map(|t| (t, s.input)),
        })
        .collect();
    let mock = MockAnthropic::start(script)?;
    println!("{}", mock.base_url());
    loop {
        std::thread::park();
    }
}
