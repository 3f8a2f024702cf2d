//! What staging adds: the time from a command proposed to its card ready (the command run in the
//! view, its layer copied out and read, every diff made) against the same command run confined
//! and unstaged, interleaved in one run, on workspaces of 1,000 and 10,000 files. The goal: staging
//! adds ≤ 50 ms plus the command's own time, and does not grow with the workspace. The last lines
//! are the view's own setup cost in each mode (as root, and in a user namespace as `nobody`), as
//! the helper measured it.
//!
//! `cargo bench -p reins-cli --bench stage [-- ROUNDS]`

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reins_core::api::{DataDir, Reins, StageRequest};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

const MAKEFILE: &str = "all:\n\tmkdir -p gen\n\techo 'pub const N: u32 = 7;' > gen/consts.rs\n\
                        \tsed -i s/v1/v2/ VERSION\n\trm -f old.txt\n";

/// A workspace of `files` small source files in folders of 100, and the Makefile.
fn workspace(ws: &Path, files: usize) -> anyhow::Result<()> {
    for i in 0..files {
        let dir = ws.join(format!("src/m{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        std::fs::write(
            dir.join(format!("f{i}.rs")),
            format!("pub fn f{i}() {{}}\n"),
        )?;
    }
    std::fs::write(ws.join("Makefile"), MAKEFILE)?;
    reset(ws)
}

/// What the command changes, put back between unstaged rounds.
fn reset(ws: &Path) -> anyhow::Result<()> {
    std::fs::write(ws.join("VERSION"), "v1\n")?;
    std::fs::write(ws.join("old.txt"), "old\n")?;
    let _ = std::fs::remove_dir_all(ws.join("gen"));
    Ok(())
}

fn profile(ws: &Path, tmp: &Path) -> String {
    serde_json::json!({
        "read": ["/usr", "/bin", "/lib", "/lib64", "/etc", "/proc", "/dev", ws],
        "write": [ws, tmp],
        "hidden": [],
        "read_only": [ws.join(".git/hooks"), ws.join(".git/config")],
        "network": "none",
    })
    .to_string()
}

fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(15);
    let helper = env!("CARGO_BIN_EXE_reins-contain");
    std::env::set_var("REINS_CONTAIN_HELPER", helper);
    let rt = tokio::runtime::Runtime::new()?;
    let tmp = tempfile::tempdir()?;
    let reins = rt.block_on(Reins::open(
        DataDir::at(&tmp.path().join("data")),
        reins_tests::options(),
    ))?;
    println!("staging `make` (writes 2 files, edits 1, deletes 1), {rounds} rounds each, medians:");
    let mut added = Vec::new();
    for files in [1_000usize, 10_000] {
        let ws = tmp.path().join(format!("ws{files}"));
        let own_tmp = tmp.path().join(format!("tmp{files}"));
        std::fs::create_dir_all(&own_tmp)?;
        workspace(&ws, files)?;
        let profile = profile(&ws, &own_tmp);
        let (mut plain, mut staged) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            reset(&ws)?;
            let started = Instant::now();
            let out = Command::new(helper)
                .args(["__contain", "--profile", &profile, "--", "make", "-s"])
                .current_dir(&ws)
                .stdin(Stdio::null())
                .output()?;
            plain.push(started.elapsed().as_secs_f64() * 1000.0);
            anyhow::ensure!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            reset(&ws)?;
            let started = Instant::now();
            let card = rt.block_on(reins.stage_command(StageRequest {
                workspace: ws.clone(),
                argv: vec!["make".into(), "-s".into()],
                timeout: Duration::from_secs(60),
                cap_bytes: 256 << 20,
            }))?;
            staged.push(started.elapsed().as_secs_f64() * 1000.0);
            anyhow::ensure!(card.changes.len() == 4, "{card:#?}");
        }
        let (p, s) = (median(plain), median(staged));
        println!(
            "  {files:>6} files: unstaged (confined) {p:6.2} ms   staged, card ready {s:6.2} ms   \
             added {:6.2} ms   ratio {:.2}×",
            s - p,
            s / p
        );
        added.push(s - p);
    }
    println!(
        "  added at 10,000 files against 1,000: {:.2}× (goal: does not grow); goal ≤ 50 ms added: {}",
        added[1] / added[0].max(0.001),
        if added.iter().all(|a| *a <= 50.0) { "met" } else { "missed" }
    );
    setup_costs(helper, tmp.path(), rounds)?;
    rt.block_on(reins.close());
    Ok(())
}

/// The view's setup (namespace, tmpfs, overlay) as the helper timed it, staging `true`: as this
/// user, and as `nobody` in a user namespace when this user is root.
fn setup_costs(helper: &str, dir: &Path, rounds: usize) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let ws = dir.join("ws-setup");
    std::fs::create_dir_all(&ws)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o777))?;
    let profile = profile(&ws, &ws);
    let root = rustix::process::geteuid().is_root();
    let users: &[(&str, bool)] = if root {
        &[("root", false), ("nobody (user namespace)", true)]
    } else {
        &[("this user (user namespace)", false)]
    };
    for (who, nobody) in users {
        let mut micros = Vec::new();
        for i in 0..rounds {
            let out = dir.join(
                format!("out-{who}-{i}")
                    .replace(' ', "_")
                    .replace(['(', ')'], ""),
            );
            std::fs::create_dir_all(&out)?;
            std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777))?;
            let plan = out.with_extension("json");
            std::fs::write(
                &plan,
                serde_json::json!({"workspace": ws, "out": out, "cap_bytes": 1 << 20}).to_string(),
            )?;
            let mut cmd = if *nobody {
                let mut c = Command::new("setpriv");
                c.args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "--",
                    helper,
                ]);
                c
            } else {
                Command::new(helper)
            };
            let status = cmd
                .args(["__contain", "--profile", &profile, "--stage"])
                .arg(&plan)
                .args(["--", "true"])
                .current_dir(&ws)
                .status()?;
            anyhow::ensure!(status.success(), "staging `true` as {who} failed");
            let export: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join("export.json"))?)?;
            micros.push(export["setup_micros"].as_f64().unwrap_or(f64::NAN));
            let mode = export["mode"].as_str().unwrap_or_default().to_owned();
            if i + 1 == rounds {
                println!(
                    "  view setup as {who}: {:.2} ms median ({mode})",
                    median(micros.clone()) / 1000.0
                );
            }
        }
    }
    Ok(())
}
