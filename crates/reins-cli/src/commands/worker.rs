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
    /// Team mode: also carry out runs started on other machines whose workspace lies under DIR (a
    /// shared mount, or a checkout at the same path). Repeat for several. Runs started on this
    /// machine are always this worker's to carry out.
    #[arg(long = "workspace-root", value_name = "DIR")]
    pub workspace_roots: Vec<std::path::PathBuf>,
    /// Team mode: also carry out runs that name no machine (made before machines were recorded).
    /// Like every run from another machine, they start only agents and MCP servers registered on
    /// this machine under the names they give.
    #[arg(long)]
    pub adopt_legacy: bool,
}

/// The declared roots as absolute, existing directories.
pub fn roots(dirs: &[std::path::PathBuf]) -> reins_core::api::Result<Vec<std::path::PathBuf>> {
    dirs.iter()
        .map(|d| {
            std::fs::canonicalize(d)
                .ok()
                .filter(|p| p.is_dir())
                .ok_or_else(|| {
                    reins_core::api::Error::Invalid(format!(
                        "--workspace-root {}: not a directory this machine can read",
                        d.display()
                    ))
                })
        })
        .collect()
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
