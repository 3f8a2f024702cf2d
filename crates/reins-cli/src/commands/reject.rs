//! `reins reject ID --reason TEXT [--siblings]`: the agent is told the reason; with `--siblings`, the
//! calls it queued after this one in the same turn are refused with it.

use reins_core::api::Reins;

use super::review::{after_decision, who};

#[derive(clap::Args)]
pub struct Args {
    /// The approval id, or a unique prefix of it.
    id: String,
    /// Why: the agent is told this as the step's result, and the audit log keeps it.
    #[arg(long, value_name = "TEXT")]
    reason: String,
    /// Also reject the calls the agent queued after this one in the same turn (the card lists
    /// them under "queued"): none of them is proposed, and the agent hears why.
    #[arg(long)]
    siblings: bool,
    /// Carry the run on here until its next stop, instead of leaving it queued for a worker.
    #[arg(long)]
    drive: bool,
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::api::Result<u8> {
    let decided = reins
        .reject_with(&args.id, &args.reason, &who(), args.siblings)
        .await?;
    if !json {
        let with = match decided.approval.siblings_rejected {
            0 => String::new(),
            n => format!(" with the {n} call(s) queued after it"),
        };
        println!(
            "rejected {} (step {}, {}){with}: the agent is told \"{}\"",
            decided.approval.id,
            decided.approval.step_seq,
            decided.approval.tool,
            args.reason.trim()
        );
    }
    after_decision(reins, &decided, args.drive, json).await
}
