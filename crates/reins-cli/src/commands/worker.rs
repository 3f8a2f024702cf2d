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

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::api::Result<u8> {
    let printer = Printer::new(json);
    crate::signals::drain_on_signal(reins.drain_flag());
    // An edited policy file decides the next action, as in the app.
    let summary = reins
        .watching_policy(reins.work(
            args.once,
            Duration::from_millis(args.poll_ms.max(50)),
            &printer,
        ))
        .await?;
    if json {
        print_json(&summary);
    } else {
        println!(
            "worker: drove {} run(s): {} finished, {} waiting for a human, {} paused, {} retried after a transient error, {} taken by another worker",
            summary.driven, summary.finished, summary.waiting, summary.paused, summary.retrying, summary.lost
        );
    }
    Ok(exit::DONE)
}
