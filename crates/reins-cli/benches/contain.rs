//! What confinement adds to starting a process: the same program started directly and through the
//! helper (with a command's profile: Landlock, seccomp, the mount layer), interleaved in one run.
//! The helper is `reins-contain`, what Reins uses when it is installed beside it; `reins __contain`
//! (the same code in the full binary, the app's fallback) is measured too. The goal is ≤ 2 ms
//! median added per command. The last pairs do the same for a Node.js program, the runtime most
//! external agents start on: under a command's profile, and under an agent's (its state dir, its
//! model's port and the memory link): what starting an agent confined adds.
//!
//! `cargo bench -p reins-cli --bench contain [-- ROUNDS]`

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time(cmd: &mut Command) -> anyhow::Result<f64> {
    let started = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(ms)
}

/// A command's profile for `ws`, as Reins derives it (the same shape the escape suite uses).
fn profile(ws: &Path, tmp: &Path, home: &Path) -> serde_json::Value {
    let protected: Vec<_> = [".git/hooks", ".git/config", ".claude", ".reins", ".vscode"]
        .iter()
        .map(|p| ws.join(p))
        .collect();
    serde_json::json!({
        "read": ["/usr", "/bin", "/lib", "/lib64", "/etc", "/proc", "/dev", ws, home],
        "write": [ws, tmp],
        "hidden": [home.join(".ssh"), home.join(".aws")],
        "read_only": protected,
        "network": "none",
    })
}

/// An external agent's profile, as Reins derives it for an agent it knows: a command's reads plus
/// its program's tree, writes to its own state dir and the workspace, and TCP to its model's port
/// and the memory link only.
fn agent_profile(ws: &Path, tmp: &Path, home: &Path, program: &Path) -> serde_json::Value {
    let mut p = profile(ws, tmp, home);
    let tree = program.parent().and_then(Path::parent).unwrap_or(program);
    if let Some(read) = p["read"].as_array_mut() {
        read.push(serde_json::json!(tree));
    }
    p["write"] = serde_json::json!([ws, tmp, home.join(".qwen")]);
    p["network"] = serde_json::json!({"to": {
        "endpoints": [
            {"host": "127.0.0.1", "port": 40000},
            {"host": "api.example.com", "port": 443}
        ],
        "serves_itself": false
    }});
    p
}

/// A relay plan for the agent's endpoints, and a stand-in for Reins' side of it that takes each
/// helper's listening sockets and lets them go: what the helper pays to filter by host (its own
/// network namespace, loopback up, a listener per endpoint, the hosts file laid over).
fn relay_plan(dir: &Path) -> anyhow::Result<String> {
    use std::io::Read as _;
    let socket = dir.join("relay.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket)?;
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut bytes = [0u8; 4096];
            let _ = conn.read(&mut bytes);
        }
    });
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "127.0.2.1\tapi.example.com\n127.0.0.1\tlocalhost\n")?;
    let plan = dir.join("relay.json");
    std::fs::write(
        &plan,
        serde_json::json!({
            "socket": socket,
            "listen": ["127.0.0.1:40000", "127.0.2.1:443"],
            "hosts": hosts,
        })
        .to_string(),
    )?;
    Ok(plan.display().to_string())
}

/// The helper and what it runs, for one pair.
struct Through<'a> {
    helper: &'a str,
    argv: &'a [&'a str],
    /// A relay plan for the helper (`--relay`).
    relay: Option<&'a str>,
}

fn pair(
    label: &str,
    through: Through<'_>,
    rounds: usize,
    ws: &Path,
    profile: &str,
) -> anyhow::Result<()> {
    let Through {
        helper,
        argv,
        relay,
    } = through;
    let direct = || {
        let mut c = Command::new(argv[0]);
        c.args(&argv[1..]).current_dir(ws);
        c
    };
    let confined = || {
        let mut c = Command::new(helper);
        c.args(["__contain", "--profile", profile]);
        if let Some(plan) = relay {
            c.args(["--relay", plan]);
        }
        c.arg("--").args(argv).current_dir(ws);
        c
    };
    // Warm the page cache for both.
    time(&mut direct())?;
    time(&mut confined())?;
    let (mut d, mut c) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        d.push(time(&mut direct())?);
        c.push(time(&mut confined())?);
    }
    let (d, c) = (median(d), median(c));
    println!("{label}: direct median {d:.2} ms, confined median {c:.2} ms over {rounds} starts");
    println!(
        "{label}: ratio confined / direct {:.2}×; added {:.2} ms",
        c / d,
        c - d
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let tmp = tempfile::tempdir()?;
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(ws.join(".git/hooks"))?;
    std::fs::write(ws.join(".git/config"), "[core]\n")?;
    std::fs::create_dir_all(tmp.path().join("tmp"))?;
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join(".ssh"))?;
    let profile = profile(&ws, &tmp.path().join("tmp"), &home).to_string();
    let small = env!("CARGO_BIN_EXE_reins-contain");
    let full = env!("CARGO_BIN_EXE_reins");
    let true_ = ["/bin/true"];
    pair(
        "command `/bin/true` through reins-contain (goal ≤ 2 ms added)",
        Through {
            helper: small,
            argv: &true_,
            relay: None,
        },
        rounds,
        &ws,
        &profile,
    )?;
    pair(
        "command `/bin/true` through `reins __contain` (the app's fallback)",
        Through {
            helper: full,
            argv: &true_,
            relay: None,
        },
        rounds,
        &ws,
        &profile,
    )?;
    let node = ["/usr/bin/node", "/usr/local/bin/node"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let Some(node) = node else {
        println!("agent runtime: no node on this machine; not measured");
        return Ok(());
    };
    std::fs::create_dir_all(home.join(".qwen"))?;
    let agent = agent_profile(&ws, &tmp.path().join("tmp"), &home, Path::new(node)).to_string();
    let plan = relay_plan(tmp.path())?;
    for (label, profile, relay) in [
        ("agent runtime `node -e 0` through reins-contain", &profile, None),
        (
            "agent start `node -e 0` under an agent's profile (its state, two endpoints, by port)",
            &agent,
            None,
        ),
        (
            "agent start `node -e 0` under an agent's profile, filtered by host (network namespace, relay)",
            &agent,
            Some(plan.as_str()),
        ),
    ] {
        pair(
            label,
            Through {
                helper: small,
                argv: &[node, "-e", "0"],
                relay,
            },
            (rounds / 4).max(10),
            &ws,
            profile,
        )?;
    }
    Ok(())
}
