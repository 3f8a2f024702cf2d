//! `reins rollback RUN --to SEQ [--dry-run]`

use reins_core::api::Reins;

use crate::exit;
use crate::output::print_json;

#[derive(clap::Args)]
pub struct Args {
    /// The run id (or a unique prefix of it).
    run: String,
    /// The checkpoint seq to restore the files to (see `reins show RUN`).
    #[arg(long, value_name = "SEQ")]
    to: i64,
    /// Print the diff of what would change, change nothing.
    #[arg(long)]
    dry_run: bool,
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::api::Result<u8> {
    let id = reins.resolve_run(&args.run).await?;
    let report = reins.rollback(id, args.to, args.dry_run).await?;
    if json {
        print_json(&report);
        return Ok(exit::DONE);
    }
    if report.changes.is_empty() {
        println!(
            "the files already match checkpoint {}; nothing to do",
            report.to
        );
        return Ok(exit::DONE);
    }
    if report.dry_run {
        println!(
            "rollback of run {id} to checkpoint {} would change {} file(s):\n",
            report.to,
            report.changes.len()
        );
        for c in &report.changes {
            print!("{}", c.diff);
        }
        println!("\nnothing was changed (dry run)");
    } else {
        println!(
            "restored {} file(s) to checkpoint {}:",
            report.changes.len(),
            report.to
        );
        for c in &report.changes {
            let what = match (&c.from, &c.to) {
                (None, Some(_)) => "recreated",
                (Some(_), None) => "removed",
                _ => "restored",
            };
            println!("  {what:<9} {}", c.path);
        }
        if let Some(snapshot) = report.snapshot {
            println!("the state before the rollback is checkpoint {snapshot}; undo with: reins rollback {id} --to {snapshot}");
        }
    }
    Ok(exit::DONE)
}
