//! F13: the files a person or a workspace hands Reins (the plan, the workspace policy, an edit)
//! cannot hang it or exhaust its memory: a FIFO, `/dev/zero`, or a link to one is refused at once,
//! with the reason.

use std::time::{Duration, Instant};

use crate::common;

use common::{text, Cli};

fn fifo(path: &std::path::Path) -> anyhow::Result<()> {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )?;
    Ok(())
}

/// Runs `reins args`, failing the test if it takes more than 30 s (the old behaviour was to block
/// forever on a FIFO, or to grow until the kernel killed it on /dev/zero).
fn quick(cli: &Cli, args: &[&str]) -> anyhow::Result<std::process::Output> {
    let mut child = cli
        .cmd()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let start = Instant::now();
    while child.try_wait()?.is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            child.kill()?;
            anyhow::bail!("reins {args:?} was still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(child.wait_with_output()?)
}

#[test]
fn a_plan_that_is_not_a_regular_file_is_refused_at_once() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let ws = cli.ws();
    let ws = ws.to_string_lossy();
    let out = quick(
        &cli,
        &[
            "run",
            "--plan",
            "/dev/zero",
            "--workspace",
            &ws,
            "--no-wait",
        ],
    )?;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out).contains("is a device, not a regular file"),
        "{}",
        text(&out)
    );
    let pipe = cli.data().with_file_name("plan.fifo");
    fifo(&pipe)?;
    let out = quick(
        &cli,
        &[
            "run",
            "--plan",
            &pipe.to_string_lossy(),
            "--workspace",
            &ws,
            "--no-wait",
        ],
    )?;
    assert!(text(&out).contains("is a FIFO"), "{}", text(&out));
    Ok(())
}

#[test]
fn a_workspace_policy_that_is_a_fifo_or_a_link_fails_closed_at_once() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let ws = cli.ws();
    std::fs::create_dir_all(ws.join(".reins"))?;
    let args = r#"{"path":"README.md"}"#;
    for (make, why) in [
        (
            Box::new(|p: &std::path::Path| fifo(p))
                as Box<dyn Fn(&std::path::Path) -> anyhow::Result<()>>,
            "is a FIFO",
        ),
        (
            Box::new(|p: &std::path::Path| Ok(std::os::unix::fs::symlink("/dev/zero", p)?)),
            "symbolic link",
        ),
    ] {
        let policy = ws.join(".reins/policy.toml");
        let _ = std::fs::remove_file(&policy);
        make(&policy)?;
        let out = quick(
            &cli,
            &[
                "--json",
                "policy",
                "check",
                "--workspace",
                &ws.to_string_lossy(),
                "--tool",
                "fs.read",
                "--args",
                args,
            ],
        )?;
        let printed = text(&out);
        assert!(printed.contains(why), "{printed}");
        let verdict: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        assert_ne!(verdict["decision"], "allow", "fails closed: {printed}");
    }
    Ok(())
}
