//! `reins run --claude GOAL --workspace DIR` · `reins run --resume SESSION --workspace DIR`:
//! Claude Code headless under Reins, driven like any other run (see `run.rs`).

use std::path::PathBuf;
use std::time::Duration;

use reins_core::api::ClaudeRunRequest;

#[derive(clap::Args)]
#[command(next_help_heading = "Claude Code (with --claude or --resume)")]
pub struct ClaudeArgs {
    /// The `claude` program [default: `claude` on PATH]
    #[arg(long, value_name = "PATH")]
    claude_program: Option<PathBuf>,
    /// Pass VAR from this environment to Claude Code (a base URL, a proxy); repeatable. Claude
    /// Code otherwise gets only PATH, HOME, the locale and the XDG folders.
    #[arg(long = "pass-env", value_name = "VAR")]
    pass_env: Vec<String>,
    /// Seconds one tool call waits for a decision before it is denied [default: 86400]
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    review_deadline: Option<u64>,
}

impl ClaudeArgs {
    /// The session to start (with a goal) or resume.
    pub fn request(
        self,
        goal: Option<String>,
        resume: Option<String>,
        env: Vec<(String, String)>,
        may_write: Vec<PathBuf>,
    ) -> ClaudeRunRequest {
        ClaudeRunRequest {
            goal,
            resume,
            program: self.claude_program,
            env: env.into_iter().collect(),
            pass_env: self.pass_env,
            review_deadline: self.review_deadline.map(Duration::from_secs),
            may_write,
        }
    }
}
