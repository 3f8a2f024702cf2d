//! What Reins' Claude Code hook adds to an allowed read-only tool call: the whole `reins hook
//! claude-code` process (start, open the store, classify, record the step, answer), against the
//! same program started and ended with nothing to do (`reins --version`), in the same run. The goal
//! is ≤ 30 ms median for the hook, so interactive use does not feel slower.
//!
//! `cargo bench -p reins-cli --bench hook [-- ROUNDS]`

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time(cmd: &mut Command, stdin: &[u8]) -> anyhow::Result<(f64, Vec<u8>)> {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin)?;
    }
    let out = child.wait_with_output()?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((ms, out.stdout))
}

fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    let tmp = tempfile::tempdir()?;
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws)?;
    std::fs::write(ws.join("a.txt"), "hello\n")?;
    let reins = env!("CARGO_BIN_EXE_reins");
    let data = tmp.path().join("data");
    let input = serde_json::json!({
        "session_id": "bench", "cwd": ws, "hook_event_name": "PreToolUse",
        "tool_name": "Read", "tool_input": {"file_path": ws.join("a.txt")},
        "tool_use_id": "toolu_1", "permission_mode": "default",
    })
    .to_string();
    let hook = || {
        let mut c = Command::new(reins);
        c.arg("--data-dir")
            .arg(&data)
            .args(["hook", "claude-code"])
            .env("REINS_CONFIG_DIR", tmp.path().join("config"))
            .env_remove("REINS_POLICY");
        c
    };
    // The session's run is created by its first call: not what is measured.
    let (_, first) = time(&mut hook(), input.as_bytes())?;
    anyhow::ensure!(
        String::from_utf8_lossy(&first).contains("\"allow\""),
        "the read was not allowed: {}",
        String::from_utf8_lossy(&first)
    );
    let (mut hooks, mut bare) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        hooks.push(time(&mut hook(), input.as_bytes())?.0);
        bare.push(time(Command::new(reins).arg("--version"), b"")?.0);
    }
    let (h, b) = (median(hooks), median(bare));
    println!("hook, allowed read-only call: median {h:.1} ms over {rounds} calls (goal ≤ 30 ms)");
    println!("baseline, `reins --version`: median {b:.1} ms");
    println!(
        "ratio hook / baseline: {:.2}×; Reins' own part: {:.1} ms",
        h / b,
        h - b
    );
    Ok(())
}
