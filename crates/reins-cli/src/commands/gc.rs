//! `reins gc [--dry-run] [--keep N]`

use reins_core::api::Reins;

use crate::exit;
use crate::output::print_json;

#[derive(clap::Args)]
pub struct Args {
    /// Say what would be removed, and remove nothing.
    #[arg(long)]
    dry_run: bool,
    /// Checkpoints to keep per finished run (the newest ones); rollback can reach only these.
    #[arg(
        long,
        env = "REINS_KEEP_CHECKPOINTS",
        default_value_t = 20,
        value_name = "N"
    )]
    keep: usize,
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::api::Result<u8> {
    let report = reins.gc(args.keep, args.dry_run).await?;
    if json {
        print_json(&report);
        return Ok(exit::DONE);
    }
    let verb = if report.dry_run {
        "would remove"
    } else {
        "removed"
    };
    println!(
        "{verb} {} checkpoint(s) ({}) from {} finished run(s), keeping the last {} of each",
        report.checkpoints,
        bytes(report.checkpoint_bytes.max(0).unsigned_abs()),
        report.runs,
        report.keep
    );
    println!(
        "{verb} {} blob file(s) ({}) and {} small blob(s) in the database that nothing refers to",
        report.blob_files,
        bytes(report.blob_file_bytes),
        report.db_blobs
    );
    if report.young_blobs_kept > 0 {
        println!(
            "kept {} unreferenced blob file(s) younger than 10 minutes (a worker may be about to use them)",
            report.young_blobs_kept
        );
    }
    Ok(exit::DONE)
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}
