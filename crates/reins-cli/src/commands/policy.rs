//! `reins policy check --tool T --args JSON`: what the policy decides, and why, without running it.

use std::path::PathBuf;

use reins_core::api::Error;
use reins_core::api::Reins;

use crate::exit;
use crate::output::print_json;

#[derive(clap::Subcommand)]
pub enum PolicyCommand {
    /// Explain the decision for one tool call (nothing runs). Exit 0 whatever the decision.
    Check(CheckArgs),
    /// Print where the policy file is read from and what it may contain.
    Path,
    /// What the shell classifier knows about programs: what each can do beyond everyday use, and
    /// how that is rated. A program not listed is not known, so it is high risk.
    Programs {
        /// Only this program's row.
        program: Option<String>,
    },
}

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The tool: fs.read, fs.write, fs.edit, fs.delete, fs.move, fs.list, fs.search, shell.exec,
    /// http.fetch.
    #[arg(long)]
    tool: String,
    /// The arguments as JSON, e.g. '{"command": "cargo test"}' or '{"path": ".env"}'.
    #[arg(long, value_name = "JSON")]
    args: String,
    /// The workspace the call would run in (paths are judged relative to it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    workspace: PathBuf,
}

pub async fn exec(reins: &Reins, cmd: PolicyCommand, json: bool) -> reins_core::api::Result<u8> {
    match cmd {
        PolicyCommand::Path => {
            let path = reins.policy_file();
            if json {
                print_json(&serde_json::json!({ "policyFile": path, "exists": path.exists() }));
            } else {
                println!(
                    "{} ({})",
                    path.display(),
                    if path.exists() {
                        "in use"
                    } else {
                        "not created: built-in defaults apply"
                    }
                );
                println!("  rules: [[rules]] decision = \"allow\"|\"ask\"|\"deny\", tool = \"fs.*\", paths = [globs], program = \"cargo\", args = [globs], hosts = [globs], reason = \"…\"");
                println!("  a workspace may add .reins/policy.toml: its deny and ask rules apply, its allow rules never do");
            }
            Ok(exit::DONE)
        }
        PolicyCommand::Programs { program } => {
            let rows = Reins::known_programs(program.as_deref());
            if json {
                print_json(&rows);
                return Ok(exit::DONE);
            }
            if rows.is_empty() {
                println!(
                    "{}: not a program Reins knows; a command that runs it is high risk",
                    program.unwrap_or_default()
                );
                return Ok(exit::DONE);
            }
            for row in rows {
                println!("{}", row.programs.join(", "));
                println!("  can: {}", row.powers.join(", "));
                println!("  rated: {}", row.handling);
            }
            Ok(exit::DONE)
        }
        PolicyCommand::Check(args) => {
            let value: serde_json::Value = serde_json::from_str(&args.args)
                .map_err(|e| Error::Invalid(format!("--args is not JSON: {e}")))?;
            let check = reins
                .policy_check(&args.tool, value, &args.workspace)
                .await?;
            if json {
                print_json(&check);
                return Ok(exit::DONE);
            }
            println!(
                "{}: {} ({} risk)",
                check.tool,
                check.decision.as_str().to_uppercase(),
                check.risk.as_str()
            );
            for r in &check.reasons {
                println!("  - {}", reins_core::api::reveal(r));
            }
            if !check.segments.is_empty() {
                println!("parts:");
                for s in &check.segments {
                    println!(
                        "  [{}] {}",
                        s.risk.as_str(),
                        reins_core::api::reveal(&s.text)
                    );
                }
            }
            println!("action sha256 {}", check.action_hash);
            println!(
                "policy {} ({})",
                check.policy_version,
                check.policy_file.unwrap_or_default()
            );
            Ok(exit::DONE)
        }
    }
}
