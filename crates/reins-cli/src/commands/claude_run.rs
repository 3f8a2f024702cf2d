//! `reins run --claude GOAL --workspace DIR` · `reins run --resume SESSION --workspace DIR`:
//! Claude Code headless under Reins (see `reins_core::api::Reins::run_claude`).

use std::path::PathBuf;
use std::time::Duration;

use reins_core::api::{ClaudeRunRequest, Reins, RunState};

use crate::exit;
use crate::output::Printer;

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

/// What the session is: new, with a goal, or resumed.
pub struct Session {
    pub goal: Option<String>,
    pub resume: Option<String>,
    pub env: Vec<(String, String)>,
    pub workspace: PathBuf,
    /// Stop at the first card instead of waiting for its decision.
    pub no_wait: bool,
}

pub async fn exec(
    reins: &Reins,
    session: Session,
    args: ClaudeArgs,
    printer: &Printer,
    json: bool,
) -> reins_core::api::Result<u8> {
    let log = reins.data_dir().join("logs");
    let log = std::fs::create_dir_all(&log)
        .ok()
        .map(|()| log.join("claude-code.log"));
    let req = ClaudeRunRequest {
        goal: session.goal,
        resume: session.resume,
        program: args.claude_program,
        env: session.env.into_iter().collect(),
        pass_env: args.pass_env,
        review_deadline: args.review_deadline.map(Duration::from_secs),
        log,
        stop_at_card: session.no_wait,
    };
    crate::signals::drain_on_signal(reins.drain_flag());
    if !json {
        println!("  Claude Code asks Reins before each tool call; cards wait in `reins approvals` and the app");
    }
    let session_workspace = session.workspace.clone();
    let outcome = reins.run_claude(req, &session.workspace, printer).await?;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "run": outcome.run.to_string(),
                "session": outcome.session,
                "state": outcome.state.to_string(),
                "summary": outcome.summary,
            })
        );
    } else if outcome.state.is_terminal() {
        println!(
            "Claude Code session {} (run {})",
            outcome.session, outcome.run
        );
    } else if outcome.state == RunState::AwaitingApproval && session.no_wait {
        println!(
            "Claude Code stopped at a card (session {}): {}\n  once it is decided, a worker (`reins worker`, the app) starts the session again and the card answers the call\n  see: reins approvals; reins show {}",
            outcome.session, outcome.summary, outcome.run
        );
    } else {
        println!(
            "Claude Code session {} stopped: {}\n  the run {} is {}; `reins run --resume {} --workspace {}` goes on",
            outcome.session,
            outcome.summary,
            outcome.run,
            outcome.state,
            outcome.session,
            session_workspace.display()
        );
    }
    Ok(match outcome.state {
        RunState::Succeeded => exit::DONE,
        RunState::Failed | RunState::Cancelled => exit::RUN_FAILED,
        _ => exit::NEEDS_HUMAN,
    })
}
