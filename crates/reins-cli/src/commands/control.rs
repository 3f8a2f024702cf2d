//! `reins pause RUN`, `reins resume RUN [--force | --start-over]`, `reins cancel RUN`.

use std::time::{Duration, Instant};

use reins_core::api::Reins;
use reins_core::api::RunState;
use reins_core::api::{Control, ResumeMode};

use crate::exit;
use crate::output::print_json;

#[derive(clap::Args)]
pub struct PauseArgs {
    /// The run id, or a unique prefix of it (at least 4 characters).
    run: String,
    /// Return once the pause is requested, without waiting for the worker to reach a safe point.
    #[arg(long)]
    no_wait: bool,
    /// How long to wait for the safe point before returning (the request stays in force).
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    timeout: u64,
}

#[derive(clap::Args)]
pub struct ResumeArgs {
    /// The run id, or a unique prefix of it.
    run: String,
    /// Resume even though the run was started by an incompatible build (tools, agent or input
    /// changed). Recorded in the audit log.
    #[arg(long, conflicts_with = "start_over")]
    force: bool,
    /// Cancel this run and start a new one from the same plan on the same workspace.
    #[arg(long)]
    start_over: bool,
}

#[derive(clap::Args)]
pub struct CancelArgs {
    /// The run id, or a unique prefix of it.
    run: String,
    /// Why, for the run's record and the audit log.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
}

pub async fn pause(reins: &Reins, args: PauseArgs, json: bool) -> reins_core::api::Result<u8> {
    let id = reins.resolve_run(&args.run).await?;
    let mut control = reins.pause(id).await?;
    if control.to == RunState::PauseRequested && !args.no_wait {
        if !json {
            println!("pause requested; waiting for the worker to reach a safe point…");
        }
        let deadline = Instant::now() + Duration::from_secs(args.timeout);
        loop {
            let state = reins.run_state(id).await?;
            if state != RunState::PauseRequested {
                control.to = state;
                control.message = match state {
                    RunState::Paused => format!(
                        "run {id} is paused at a verified checkpoint; `reins resume {id}` continues it"
                    ),
                    other => format!("run {id} is {other} (it reached that before pausing)"),
                };
                break;
            }
            if Instant::now() >= deadline {
                control.message = format!(
                    "run {id} is still finishing its step; it pauses at the next safe point (see `reins show {id}`)"
                );
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    report(&control, json);
    Ok(exit::DONE)
}

pub async fn resume(reins: &Reins, args: ResumeArgs, json: bool) -> reins_core::api::Result<u8> {
    let id = reins.resolve_run(&args.run).await?;
    let mode = if args.start_over {
        ResumeMode::StartOver
    } else if args.force {
        ResumeMode::Force
    } else {
        ResumeMode::Continue
    };
    let control = reins.resume(id, mode).await?;
    report(&control, json);
    if !json && control.to == RunState::Queued {
        println!("  a running `reins worker` (or the desktop app) picks it up; or run `reins worker --once`");
    }
    Ok(exit::DONE)
}

pub async fn cancel(reins: &Reins, args: CancelArgs, json: bool) -> reins_core::api::Result<u8> {
    let id = reins.resolve_run(&args.run).await?;
    let control = reins.cancel(id, args.reason.as_deref()).await?;
    report(&control, json);
    Ok(exit::DONE)
}

fn report(control: &Control, json: bool) {
    if json {
        print_json(control);
    } else {
        println!("{}", control.message);
    }
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("decision").required(true).args(["done", "retry", "skip"])))]
pub struct ResolveArgs {
    /// The intent id (or its first characters), as `reins show RUN` lists it.
    intent: String,
    /// The effect happened: the agent gets the result it would have got.
    #[arg(long)]
    done: bool,
    /// Run the effect again when the run resumes.
    #[arg(long)]
    retry: bool,
    /// Do not run it: the agent is told it was skipped.
    #[arg(long)]
    skip: bool,
    /// What you checked, for the record (audit log).
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
}

pub async fn resolve(reins: &Reins, args: ResolveArgs, json: bool) -> reins_core::api::Result<u8> {
    use reins_core::api::Resolution;
    let resolution = if args.done {
        Resolution::Done
    } else if args.retry {
        Resolution::Retry
    } else {
        Resolution::Skip
    };
    let resolved = reins
        .resolve(&args.intent, resolution, args.note.as_deref())
        .await?;
    if json {
        print_json(&resolved);
    } else {
        println!("{}", resolved.message);
    }
    Ok(exit::DONE)
}
