//! One durable commit per file step, counted in the system calls the real `reins` makes: a file
//! write's confirmation rides with the next durable commit instead of syncing the database's log
//! itself, and what it records still reaches the audit log and the anchor.

use std::process::Command;

use crate::common::{text, Cli};

/// A plan of `n` file writes, each its own step.
fn writes(cli: &Cli, n: usize) -> anyhow::Result<std::path::PathBuf> {
    let mut plan = String::from("name = \"writes\"\ngoal = \"g\"\n");
    for i in 0..n {
        plan.push_str(&format!(
            "[[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"conf/{i}.conf\", content = \"value {i}\\n\" }}\n"
        ));
    }
    let path = cli.ws().with_file_name(format!("writes-{n}.toml"));
    std::fs::write(&path, plan)?;
    Ok(path)
}

/// Runs `n` writes under strace on a fresh data dir: how often the database's log was synced.
fn log_syncs(n: usize) -> anyhow::Result<(Cli, usize)> {
    let cli = Cli::new()?;
    std::fs::create_dir_all(cli.ws())?;
    let plan = writes(&cli, n)?;
    let trace = cli.ws().with_file_name(format!("strace-{n}.txt"));
    let reins = cli.cmd();
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o"])
        .arg(&trace)
        .arg(reins.get_program())
        .args(["run", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws());
    for (k, v) in reins.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let out = c.output()?;
    anyhow::ensure!(out.status.success(), "reins run failed: {}", text(&out));
    for i in 0..n {
        assert_eq!(cli.read(&format!("conf/{i}.conf"))?, format!("value {i}\n"));
    }
    let syncs = std::fs::read_to_string(&trace)?
        .lines()
        .filter(|l| l.contains("-wal>") && l.ends_with("= 0"))
        .count();
    Ok((cli, syncs))
}

#[test]
fn a_file_step_syncs_the_log_once_and_its_confirmation_still_lands() -> anyhow::Result<()> {
    let (_, few) = log_syncs(4)?;
    let (cli, many) = log_syncs(16)?;
    // Twelve more steps: one sync each (the intent's), not two (intent and confirmation).
    let per_step = (many as f64 - few as f64) / 12.0;
    assert!(
        (0.9..1.5).contains(&per_step),
        "{per_step:.2} log syncs per step ({few} for 4 steps, {many} for 16)"
    );
    // Every confirmation committed, with its audit event and checkpoint.
    let confirmed = cli.events("intent.confirmed")?;
    assert_eq!(confirmed.len(), 16);
    let run = cli.only_run()?;
    let shown = cli.json(&["show", &run])?;
    assert_eq!(shown["run"]["state"], "succeeded", "{shown}");
    // The anchor caught up with every commit: the chain verifies, head included.
    let out = cli.run(&["audit", "verify"])?;
    assert!(out.status.success(), "{}", text(&out));
    Ok(())
}
