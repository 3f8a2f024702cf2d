//! Pause, resume, cancel and drain through the `reins` binary, against a worker process that is
//! really driving the run.

use crate::common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{signal, text, Cli};

fn many_writes(cli: &Cli, n: usize) -> anyhow::Result<std::path::PathBuf> {
    let mut plan = String::from("name = \"many\"\ngoal = \"write many notes\"\n");
    for i in 0..n {
        plan.push_str(&format!(
            "[[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"notes/{i}.txt\", content = \"{i}\" }}\n"
        ));
    }
    let path = cli.tmp.path().join("many.toml");
    std::fs::write(&path, plan)?;
    Ok(path)
}

fn state_and_steps(cli: &Cli, id: &str) -> anyhow::Result<(String, usize)> {
    let show = cli.json(&["show", id])?;
    Ok((
        show["run"]["state"].as_str().unwrap_or("").to_owned(),
        show["steps"].as_array().map_or(0, Vec::len),
    ))
}

fn until(cli: &Cli, id: &str, what: impl Fn(&str, usize) -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let (state, steps) = state_and_steps(cli, id)?;
        if what(&state, steps) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    anyhow::bail!("timed out: {:?}", state_and_steps(cli, id)?)
}

fn worker(cli: &Cli) -> anyhow::Result<Child> {
    Ok(cli
        .cmd()
        .args(["worker", "--poll-ms", "50"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?)
}

#[test]
fn pause_resume_drain_and_cancel_from_the_command_line() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let plan = many_writes(&cli, 3000)?;
    let queued = cli
        .cmd()
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .env("REINS_FAULT", "none")
        .spawn()?;
    // `run` drives in the foreground; stop it at once and let a worker process own the run.
    let mut queued = queued;
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        match cli.only_run() {
            Ok(id) => break id,
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    until(&cli, &id, |_, steps| steps >= 1)?;
    signal(&queued, rustix::process::Signal::TERM)?;
    let detached = queued.wait()?;
    assert_eq!(
        detached.code(),
        Some(3),
        "Ctrl-C/SIGTERM on `reins run` pauses: waits for a human"
    );
    assert_eq!(state_and_steps(&cli, &id)?.0, "paused");

    let out = cli.run(&["resume", &id[..8]])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let w = worker(&cli)?;
    let (_, before) = state_and_steps(&cli, &id)?;
    until(&cli, &id, |_, steps| steps >= before + 3)?;

    let out = cli.run(&["pause", &id])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("paused at a verified checkpoint"),
        "{}",
        text(&out)
    );
    let (state, paused_at) = state_and_steps(&cli, &id)?;
    assert_eq!(state, "paused");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        state_and_steps(&cli, &id)?.1,
        paused_at,
        "a paused run does nothing"
    );

    cli.run(&["resume", &id])?;
    until(&cli, &id, |state, steps| {
        state == "running" && steps > paused_at
    })?;
    // SIGTERM drains the worker: the run pauses at a safe point and the worker exits cleanly.
    signal(&w, rustix::process::Signal::TERM)?;
    let drained = w.wait_with_output()?;
    assert_eq!(drained.status.code(), Some(0), "{}", text(&drained));
    assert!(
        text(&drained).contains("2 paused"),
        "the manual pause and the drain: {}",
        text(&drained)
    );
    let show = cli.json(&["show", &id])?;
    assert_eq!(show["run"]["state"], "paused");
    assert!(show["run"]["lastError"]
        .as_str()
        .unwrap_or("")
        .contains("drain"));

    let out = cli.run(&["cancel", &id, "--reason", "changed my mind"])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = cli.run(&["resume", &id])?;
    assert_eq!(
        out.status.code(),
        Some(2),
        "a cancelled run stays cancelled: {}",
        text(&out)
    );
    assert!(text(&out).contains("cancelled"), "{}", text(&out));

    // Every completed step wrote its file exactly once; nothing ran after the cancel.
    let steps = state_and_steps(&cli, &id)?.1;
    assert_eq!(std::fs::read_dir(cli.ws().join("notes"))?.count(), steps);
    Ok(())
}
