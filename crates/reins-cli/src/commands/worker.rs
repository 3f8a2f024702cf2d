//! `reins worker [--once]`

use std::time::Duration;

use reins_core::api::Reins;

use crate::exit;
use crate::output::{print_json, Printer};

#[derive(clap::Args)]
pub struct Args {
    /// Exit when no runnable run is left, instead of waiting for new ones.
    #[arg(long)]
    once: bool,
    /// How often to look for new work, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    poll_ms: u64,
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::Result<u8> {
    let printer = Printer { json };
    let work = reins.work(
        args.once,
        Duration::from_millis(args.poll_ms.max(50)),
        &printer,
    );
    let summary = tokio::select! {
        summary = work => summary?,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("stopping: runs in flight resume from their last checkpoint on the next start");
            return Ok(exit::DONE);
        }
    };
    if json {
        print_json(&summary);
    } else {
        println!(
            "worker: drove {} run(s): {} finished, {} waiting for a human, {} taken by another worker",
            summary.driven, summary.finished, summary.waiting, summary.lost
        );
    }
    Ok(exit::DONE)
}
