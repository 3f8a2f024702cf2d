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
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::Result<u8> {
    let printer = Printer { json };
    let id = reins
        .create_script_run(&args.plan, &args.workspace, &printer)
        .await?;
    loop {
        match reins.drive(id, &printer).await? {
            DriveOutcome::Finished {
                state: RunState::Succeeded,
                ..
            } => return Ok(exit::DONE),
            DriveOutcome::Finished { .. } => return Ok(exit::RUN_FAILED),
            DriveOutcome::Lost { reason } => {
                eprintln!(
                    "another worker took over run {id}: {reason}\nfollow it with: reins show {id}"
                );
                return Ok(exit::NEEDS_HUMAN);
            }
            DriveOutcome::NeedsHuman { .. } if args.no_wait => {
                if !json {
                    println!("run {id} is waiting for a human; see: reins show {id}");
                }
                return Ok(exit::NEEDS_HUMAN);
            }
            DriveOutcome::NeedsHuman { .. } => {
                if !json {
                    println!("  waiting for a human (Ctrl-C detaches; the run stays safe in the database)");
                }
                let state = reins.wait_for_human(id, Duration::from_millis(500)).await?;
                if state.is_terminal() {
                    return Ok(if state == RunState::Succeeded {
                        exit::DONE
                    } else {
                        exit::RUN_FAILED
                    });
                }
            }
        }
    }
}
