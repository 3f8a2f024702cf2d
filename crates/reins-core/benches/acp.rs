//! Benchmark: what Reins adds to each request an external agent (ACP) sends it.
//!
//!   cargo bench -p reins-core --features internals --bench acp [-- REQUESTS ROUNDS FILES]
//!   (defaults 200 5 2000)
//!
//! Both workspaces hold FILES other files (1 KiB each, 50 to a folder), as a project does: Reins
//! watches the agent, so between its moves it fingerprints the workspace again (`engine/watch.rs`),
//! and that costs with the workspace's size. FILES=0 gives the protocol's cost alone.
//!
//! A stand-in agent (`benches/support/acp_agent.py`, no model) asks its client for REQUESTS
//! `fs/write_text_file`s and then REQUESTS `session/request_permission`s for an edit, one at a time,
//! timing each round trip itself. Each round runs it twice, in the same process, on the same disk:
//! - **pass-through**: a client on the same ACP connection code that writes the file with
//!   `std::fs::write` and allows every permission — the least a client can do;
//! - **Reins**: an ACP run under a policy that allows everything, so each write goes through the
//!   whole step protocol (jail, policy, plan and pre-image, intent with a FULL commit, atomic write,
//!   confirm with checkpoint and audit in a FULL commit) and each permission is judged as the write
//!   it reports and journaled, with no person in the loop.
//!
//! Prints the median round trip of each, and the median added per request (goal ≤ 5 ms).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/alloc.rs"]
mod alloc;

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    AgentRequest, ContentBlock, NewSessionRequest, PromptRequest, TextContent,
};
use reins_core::agent::acp::session::{Incoming, Process};
use reins_core::api::{AcpRunRequest, DataDir, DriveOutcome, Options, Reins, Silent};
use serde_json::json;

#[path = "support/permit_all.rs"]
mod permit_all;
use permit_all::PermitAll;

#[derive(serde::Deserialize)]
struct Timings {
    write: Vec<f64>,
    permission: Vec<f64>,
    /// The whole run under Reins, start to finish (set here, not by the agent).
    #[serde(default)]
    run_ms: f64,
}

fn agent_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/support/acp_agent.py")
}

fn argv(n: usize, out: &Path) -> Vec<String> {
    vec![
        "python3".into(),
        agent_script().display().to_string(),
        n.to_string(),
        out.display().to_string(),
    ]
}

fn read(out: &Path) -> Timings {
    serde_json::from_slice(&std::fs::read(out).expect("the agent wrote its timings"))
        .expect("timings are JSON")
}

/// The least a client can do: write the file, allow the permission.
async fn pass_through(n: usize, ws: &Path, out: &Path) -> Timings {
    let mut p = Process::start(&argv(n, out), ws, &[], &[], &[], None, Default::default())
        .await
        .expect("the agent starts");
    let session = p
        .conn
        .send_request(NewSessionRequest::new(ws.to_path_buf()))
        .block_task()
        .await
        .expect("a session")
        .session_id;
    let conn = p.conn.clone();
    let tx = p.events_tx.clone();
    tokio::spawn(async move {
        let r = conn
            .send_request(PromptRequest::new(
                session,
                vec![ContentBlock::Text(TextContent::new("go"))],
            ))
            .block_task()
            .await;
        let _ = tx.send(Incoming::TurnEnded(
            r.map(|r| ("end_turn".into(), r.usage))
                .map_err(|e| e.to_string()),
        ));
    });
    while let Some(event) = p.events.recv().await {
        match event {
            Incoming::Request { request, responder } => {
                let answer = match *request {
                    AgentRequest::WriteTextFileRequest(r) => {
                        if let Some(dir) = r.path.parent() {
                            std::fs::create_dir_all(dir).unwrap();
                        }
                        std::fs::write(&r.path, r.content).unwrap();
                        json!({})
                    }
                    AgentRequest::RequestPermissionRequest(_) => {
                        json!({"outcome": {"outcome": "selected", "optionId": "once"}})
                    }
                    other => panic!("unexpected request {other:?}"),
                };
                responder.respond_with_result(Ok(answer)).unwrap();
            }
            Incoming::TurnEnded(r) => {
                r.expect("the turn ends");
                break;
            }
            Incoming::Update(_) => {}
            Incoming::Closed(why) => panic!("the agent closed: {why}"),
        }
    }
    read(out)
}

/// The same agent as an ACP run under Reins.
async fn under_reins(n: usize, ws: &Path, data: &Path, out: &Path) -> Timings {
    let options = Options {
        policy: Some(std::sync::Arc::new(PermitAll)),
        ..Options::default()
    };
    let reins = Reins::open(DataDir::at(data), options).await.unwrap();
    let req = AcpRunRequest {
        goal: "measure".into(),
        name: Some("bench".into()),
        agent: shell_words::join(argv(n, out)),
        env: Default::default(),
        pass_env: Vec::new(),
        may_write: Vec::new(),
        idle_timeout_s: Some(600),
    };
    let started = std::time::Instant::now();
    let id = reins.create_run(req, ws, &Silent).await.unwrap();
    match reins.drive(id, &Silent).await.unwrap() {
        DriveOutcome::Finished { .. } => {}
        other => panic!("the run did not finish: {other:?}"),
    }
    let took = started.elapsed();
    reins.close().await;
    let mut t = read(out);
    t.run_ms = took.as_secs_f64() * 1000.0;
    t
}

/// `files` files of 1 KiB, 50 to a folder, as a project's tree is.
fn project(ws: &Path, files: usize) {
    let filler = "x".repeat(1000) + "\n";
    for i in 0..files {
        let body = format!("// file {i:08}\n{filler}");
        let dir = ws.join("src").join(format!("m{}", i / 50));
        if i % 50 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(dir.join(format!("f{i}.rs")), &body).unwrap();
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let files: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut base = (Vec::new(), Vec::new());
    let mut reins = (Vec::new(), Vec::new());
    let mut runs = Vec::new();
    println!(
        "ACP requests: {n} writes and {n} permissions per run, {rounds} rounds, {files} other files in the workspace"
    );
    for round in 1..=rounds {
        let tmp = tempfile::tempdir().unwrap();
        let (ws_a, ws_b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir_all(ws_a.join("out")).unwrap();
        std::fs::create_dir_all(ws_b.join("out")).unwrap();
        for ws in [&ws_a, &ws_b] {
            project(ws, files);
        }
        // On disk, as a project a person opens is: not dirty pages the first flush must write.
        rustix::fs::sync();
        let t = rt.block_on(pass_through(n, &ws_a, &tmp.path().join("a.json")));
        let (mut w, mut p) = (t.write, t.permission);
        let (bw, bp) = (median(&mut w), median(&mut p));
        base.0.extend(w);
        base.1.extend(p);
        let t = rt.block_on(under_reins(
            n,
            &ws_b,
            &tmp.path().join("data"),
            &tmp.path().join("b.json"),
        ));
        runs.push(t.run_ms);
        let (mut w, mut p) = (t.write, t.permission);
        let (rw, rp) = (median(&mut w), median(&mut p));
        reins.0.extend(w);
        reins.1.extend(p);
        println!(
            "round {round}: write {bw:.3} → {rw:.3} ms, permission {bp:.3} → {rp:.3} ms (pass-through → Reins, medians)"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (bw, bp) = (median(&mut base.0), median(&mut base.1));
    let (rw, rp) = (median(&mut reins.0), median(&mut reins.1));
    println!();
    println!(
        "a whole run under Reins (start, {} requests, end): {:.0} ms median; with {files} other files, its start keeps their content for undo and every command and turn end walks them",
        2 * n,
        median(&mut runs)
    );
    println!(
        "{:<22} {:>14} {:>10} {:>12} {:>8}",
        "request", "pass-through", "Reins", "added", "goal"
    );
    println!(
        "{:<22} {:>11.3} ms {:>7.3} ms {:>9.3} ms {:>8}",
        "fs/write_text_file",
        bw,
        rw,
        rw - bw,
        if rw - bw <= 5.0 {
            "≤ 5 ms ok"
        } else {
            "OVER 5 ms"
        }
    );
    println!(
        "{:<22} {:>11.3} ms {:>7.3} ms {:>9.3} ms {:>8}",
        "request_permission",
        bp,
        rp,
        rp - bp,
        if rp - bp <= 5.0 {
            "≤ 5 ms ok"
        } else {
            "OVER 5 ms"
        }
    );
}
