//! Benchmark: what Reins adds to each MCP tool call an LLM run makes under an allow rule.
//!
//!   cargo bench -p reins-core --features internals --bench mcp [-- CALLS ROUNDS]   (defaults 200 5)
//!
//! The server is the fixture MCP server (`tests/fixtures/mcp_server.py`), its `echo` tool. Each
//! round, in the same process, on the same disk:
//! - **direct**: the same client code Reins uses (rmcp, one connection) calls `echo` CALLS times,
//!   each timed;
//! - **Reins**: an LLM run whose model (a canned local server) asks for CALLS `echo` calls in one
//!   reply, under a policy that allows everything: each call goes through the whole step protocol
//!   (validate, policy, intent with a FULL commit, the call, confirm with checkpoint and audit in a
//!   FULL commit). A call's time is the gap between two steps finishing (the model is not asked
//!   between them).
//!
//! Prints the median of each, and the median added per call (goal ≤ 5 ms).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/alloc.rs"]
mod alloc;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use reins_core::api::{
    DataDir, DriveOutcome, LlmRunRequest, McpServerSpec, Observer, Options, Progress, Reins,
};
use reins_core::mcp::Hub;
use serde_json::json;

#[path = "support/model_server.rs"]
mod model_server;
#[path = "support/permit_all.rs"]
mod permit_all;
use permit_all::PermitAll;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mcp_server.py")
}

fn spec(state: &Path) -> McpServerSpec {
    McpServerSpec {
        name: "fixture".into(),
        command: vec![
            "python3".into(),
            fixture().display().to_string(),
            state.display().to_string(),
        ],
        url: None,
        bearer_key: None,
        env: Default::default(),
        pass_env: Vec::new(),
        // The fixture keeps its call log there: outside the workspace, so the person allows it.
        may_write: vec![state.to_path_buf()],
        timeout_s: None,
    }
}

/// A model server that answers the first request with `n` echo calls and every later one with
/// a final answer.
fn model_server(n: usize) -> String {
    model_server::start(move |i| {
        if i == 0 {
            let calls: Vec<_> = (0..n)
                .map(|c| {
                    (
                        format!("c{c}"),
                        "fixture__echo".to_owned(),
                        format!("{{\"text\":\"{c}\"}}"),
                    )
                })
                .collect();
            model_server::calls("", &calls)
        } else {
            model_server::text("done")
        }
    })
}

/// When each step of the run finished.
#[derive(Default)]
struct Clock(Mutex<Vec<(String, Instant)>>);

impl Observer for Clock {
    fn on(&self, p: &Progress) {
        if let Progress::Step { tool, .. } = p {
            self.0.lock().unwrap().push((tool.clone(), Instant::now()));
        }
    }
}

async fn direct(n: usize, root: &Path, state: &Path) -> Vec<f64> {
    let mut hub = Hub::start(
        &[spec(state)],
        root,
        Arc::new(reins_core::api::MemorySecrets::default()),
        None,
        Default::default(),
    )
    .await
    .unwrap();
    let tool = hub.catalog().find("fixture", "echo").unwrap().clone();
    let mut times = Vec::new();
    for i in 0..n {
        let call = reins_core::action::McpCall {
            server: tool.server.clone(),
            identity: tool.identity.clone(),
            tool: tool.tool.clone(),
            arguments: json!({"text": i.to_string()}),
            description: tool.description.clone(),
            hints: tool.hints.clone(),
        };
        let t = Instant::now();
        hub.call(&call).await.unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times
}

async fn under_reins(n: usize, root: &Path, data: &Path, state: &Path) -> Vec<f64> {
    let options = Options {
        policy: Some(Arc::new(PermitAll)),
        ..Options::default()
    };
    let reins = Reins::open(DataDir::at(data), options).await.unwrap();
    if reins.mcp_servers().unwrap().is_empty() {
        reins.add_mcp_server(spec(state)).unwrap();
    }
    let req = LlmRunRequest {
        goal: "measure".into(),
        name: Some("bench".into()),
        base_url: Some(model_server(n)),
        model: Some("bench".into()),
        max_turns: Some(5),
        context_window: Some(200_000),
        mcp: vec!["fixture".into()],
        ..LlmRunRequest::default()
    };
    let clock = Clock::default();
    let id = reins.create_run(req, root, &clock).await.unwrap();
    match reins.drive(id, &clock).await.unwrap() {
        DriveOutcome::Finished { .. } => {}
        other => panic!("the run did not finish: {other:?}"),
    }
    reins.close().await;
    let steps = clock.0.lock().unwrap();
    let calls: Vec<&Instant> = steps
        .iter()
        .filter(|(tool, _)| tool == "mcp.call")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(calls.len(), n, "every call ran as a step");
    calls
        .windows(2)
        .map(|w| w[1].duration_since(*w[0]).as_secs_f64() * 1000.0)
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(200);
    let rounds = args.get(1).copied().unwrap_or(5);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // The registered server lives in this run's own config dir.
    std::env::set_var("REINS_CONFIG_DIR", tmp.path().join("config"));
    let state = tmp.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    println!("mcp bench: {n} calls of the fixture server's echo per side, {rounds} rounds");
    println!("round  direct ms  reins ms  added ms");
    let (mut all_direct, mut all_reins, mut added) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let root = tmp.path().join(format!("ws{r}"));
        std::fs::create_dir_all(&root).unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        let mut d = rt.block_on(direct(n, &root, &state));
        let mut s = rt.block_on(under_reins(
            n,
            &root,
            &tmp.path().join(format!("data{r}")),
            &state,
        ));
        let (md, ms) = (median(&mut d), median(&mut s));
        println!("{r:>5}  {md:>9.3}  {ms:>8.3}  {:>8.3}", ms - md);
        added.push(ms - md);
        all_direct.extend(d);
        all_reins.extend(s);
    }
    let (md, ms, ma) = (
        median(&mut all_direct),
        median(&mut all_reins),
        median(&mut added),
    );
    println!(
        "median: direct {md:.3} ms, under Reins {ms:.3} ms per call; added {ma:.3} ms (goal <= 5 ms): {}",
        if ma <= 5.0 { "met" } else { "NOT met" }
    );
}
