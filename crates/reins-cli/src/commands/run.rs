//! `reins run --plan FILE --workspace DIR`

use std::path::PathBuf;
use std::time::Duration;

use reins_core::api::Reins;
use reins_core::engine::DriveOutcome;
use reins_core::run::RunState;

use crate::exit;
use crate::output::Printer;

#[derive(clap::Args)]
pub struct Args {
    /// The plan file (TOML): name, goal and a list of [[steps]] tool calls. See examples/plans/.
    #[arg(long, value_name = "FILE")]
    plan: PathBuf,
    /// The folder the agent works in; every file path is jailed beneath it.
    #[arg(long, value_name = "DIR")]
    workspace: PathBuf,
    /// Return as soon as the run needs a human (exit 3) instead of waiting for one.
    #[arg(long)]
    no_wait: bool,
    /// Only create the run and leave it queued for a worker (`reins worker`, the desktop app).
    #[arg(long, conflicts_with = "no_wait")]
    queue: bool,
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::Result<u8> {
    let printer = Printer { json };
    let id = reins
        .create_script_run(&args.plan, &args.workspace, &printer)
        .await?;
    if args.queue {
        if !json {
            println!("queued; a worker picks it up (`reins worker`), `reins show {id}` follows it");
        }
        return Ok(exit::DONE);
    }
    let poll = Duration::from_millis(500);
    crate::signals::drain_on_signal(reins.drain_flag());
    loop {
        let waiting = match reins.drive(id, &printer).await? {
            DriveOutcome::Finished { state, .. } => return Ok(exit_for(state)),
            DriveOutcome::Skipped { state, .. } if state.is_terminal() => {
                return Ok(exit_for(state))
            }
            DriveOutcome::NeedsHuman {
                state: RunState::Paused,
                reason,
            } => {
                if !json {
                    println!("run {id} is paused ({reason})");
                }
                return Ok(exit::NEEDS_HUMAN);
            }
            DriveOutcome::NeedsHuman { state, .. } => state,
            DriveOutcome::Retrying { at, .. } => {
                let wait = (at - reins_core::clock::now_ms()).max(0).unsigned_abs();
                tokio::time::sleep(Duration::from_millis(wait)).await;
                continue;
            }
            DriveOutcome::Skipped {
                state: RunState::Queued,
                ..
            } => {
                // Waiting out a retry backoff, or claimed and released by someone else.
                tokio::time::sleep(poll).await;
                continue;
            }
            DriveOutcome::Skipped { state, .. } if state.needs_human() => state,
            DriveOutcome::Lost { .. } | DriveOutcome::Skipped { .. } if reins.draining() => {
                return Ok(detached(id, json));
            }
            DriveOutcome::Lost { reason } | DriveOutcome::Skipped { reason, .. } => {
                // Another worker drives it (a `reins worker`, the desktop app): follow it.
                if !json {
                    println!("  another worker is driving this run ({reason}); following it");
                }
                if !follow(reins, id, poll, |s| !s.is_active()).await? {
                    return Ok(detached(id, json));
                }
                continue;
            }
        };
        if args.no_wait {
            if !json {
                println!("run {id} is {waiting} and needs a human; see: reins show {id}");
            }
            return Ok(exit::NEEDS_HUMAN);
        }
        if !json {
            println!("  waiting for a human (Ctrl-C detaches; the run stays safe in the database)");
        }
        if !follow(reins, id, poll, |s| !s.needs_human()).await? {
            return Ok(detached(id, json));
        }
    }
}

/// Waits until `done(state)`; false when the user asked to stop waiting (Ctrl-C, SIGTERM).
async fn follow(
    reins: &Reins,
    id: reins_core::ids::RunId,
    poll: Duration,
    done: fn(RunState) -> bool,
) -> reins_core::Result<bool> {
    loop {
        if done(reins.run_state(id).await?) {
            return Ok(true);
        }
        if reins.draining() {
            return Ok(false);
        }
        tokio::time::sleep(poll.min(Duration::from_millis(100))).await;
    }
}

fn detached(id: reins_core::ids::RunId, json: bool) -> u8 {
    if !json {
        println!("detached from run {id}; it stays safe in the database (see: reins show {id})");
    }
    exit::NEEDS_HUMAN
}

fn exit_for(state: RunState) -> u8 {
    if state == RunState::Succeeded {
        exit::DONE
    } else {
        exit::RUN_FAILED
    }
}
