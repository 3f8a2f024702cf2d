//! `reins run --plan FILE --workspace DIR` · `reins run --llm GOAL --workspace DIR` ·
//! `reins run --acp GOAL --agent CMD --workspace DIR` ·
//! `reins run --claude GOAL --workspace DIR` · `reins run --resume SESSION --workspace DIR`

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

use reins_core::api::DriveOutcome;
use reins_core::api::Reins;
use reins_core::api::RunState;
use reins_core::api::{AcpRunRequest, LlmRunRequest, Price, RunRequest};

use crate::exit;
use crate::output::Printer;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("kind").args(["plan", "llm", "acp", "claude"])))]
pub struct Args {
    /// The plan file (TOML): name, goal and a list of [[steps]] tool calls. See examples/plans/.
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// Run the LLM agent on this goal (an OpenAI-compatible server: a local Ollama by default).
    #[arg(long, value_name = "GOAL")]
    llm: Option<String>,
    /// Run an external agent (Agent Client Protocol: Qwen Code, opencode, Codex, Claude Code,
    /// Gemini CLI, Goose…) on this goal, with every write and command under Reins' review.
    #[arg(long, value_name = "GOAL", requires = "agent")]
    acp: Option<String>,
    /// With --acp: a registered agent (`reins agents list`) or the agent's command line, split
    /// like a shell splits words but never run through a shell.
    #[arg(long, value_name = "CMD", requires = "acp")]
    agent: Option<String>,
    /// Run Claude Code headless on this goal (`claude -p` on its stream-json channel): every tool
    /// call it asks for is judged by Reins' policy and reviewed in Reins' inbox.
    #[arg(long, value_name = "GOAL")]
    claude: Option<String>,
    /// Resume the headless Claude Code session SESSION (its run's name ends with it): a card left
    /// waiting by a Reins that stopped answers the same call when Claude Code asks again.
    /// With --claude GOAL, GOAL is what the resumed session is told next.
    #[arg(long, value_name = "SESSION", conflicts_with_all = ["plan", "llm", "acp"])]
    resume: Option<String>,
    /// With --acp or --claude: set VAR from the keyring entry KEY (`reins keys set KEY`), e.g.
    /// ANTHROPIC_API_KEY=anthropic; repeatable. Keys never touch the disk or the logs.
    #[arg(long = "env", value_name = "VAR=KEY", value_parser = crate::commands::agents::var_key)]
    env: Vec<(String, String)>,
    /// With --llm: offer the model the tools of this registered MCP server (`reins mcp list`);
    /// repeatable. Every call is reviewed with its exact arguments unless a rule allows it.
    #[arg(long = "mcp", value_name = "NAME", requires = "llm")]
    mcp: Vec<String>,
    /// With --acp or --claude: let the agent write DIR besides its own state; repeatable. The
    /// agent runs confined: an ACP agent Reins does not know writes only through Reins, and naming
    /// the workspace lets it write there itself, minus the protected paths (Claude Code always
    /// may). Recorded with the run.
    #[arg(long = "agent-may-write", value_name = "DIR")]
    agent_may_write: Vec<PathBuf>,
    /// With --acp: seconds the agent may stay silent mid-turn before the run is suspended [default: 600]
    #[arg(long, value_name = "SECS", requires = "acp")]
    idle_timeout: Option<u64>,
    /// The folder the agent works in; every file path is jailed beneath it.
    #[arg(long, value_name = "DIR")]
    workspace: PathBuf,
    /// Return as soon as the run needs a human (exit 3) instead of waiting for one. A headless
    /// Claude Code session is stopped at its card; once decided, a worker starts it again.
    #[arg(long)]
    no_wait: bool,
    /// Only create the run and leave it queued for a worker (`reins worker`, the desktop app).
    #[arg(long, conflicts_with = "no_wait")]
    queue: bool,
    #[command(flatten)]
    claude_args: crate::commands::claude_run::ClaudeArgs,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    budget: crate::commands::budget::RunBudget,
}

/// The model an LLM run talks to. Read from the command line or the environment only — never from
/// a file in the workspace. What is left out comes from the data dir's provider settings (the app's
/// Settings), then the built-in defaults.
#[derive(clap::Args)]
#[command(next_help_heading = "Model (with --llm)")]
pub struct ModelArgs {
    /// The server's OpenAI-compatible base URL, ending in /v1 [default: the provider setting, else
    /// a local Ollama at http://127.0.0.1:11434/v1]
    #[arg(long, env = "REINS_BASE_URL", value_name = "URL")]
    base_url: Option<String>,
    /// The model name as the server knows it (`ollama list`) [default: the provider setting]
    #[arg(long, env = "REINS_MODEL", value_name = "NAME")]
    model: Option<String>,
    /// The keyring entry holding the API key (`reins keys set NAME`); none for a local server.
    #[arg(long, env = "REINS_KEY", value_name = "NAME")]
    key: Option<String>,
    /// Tokens the model takes in, prompt and answer [default: 32768]
    #[arg(long, value_name = "TOKENS")]
    context_window: Option<usize>,
    /// Tokens reserved for each answer [default: 4096]
    #[arg(long, value_name = "TOKENS")]
    max_output: Option<usize>,
    #[arg(long)]
    temperature: Option<f32>,
    /// The longest the server may stay silent, before the first byte and between chunks [default: 120]
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Most model calls the run makes before it stops, 1 to 1000 [default: 50]
    #[arg(long, value_name = "N")]
    max_turns: Option<u32>,
    /// Price in US dollars per million prompt tokens (with --price-out: cost per step).
    #[arg(long, value_name = "USD", requires = "price_out")]
    price_in: Option<f64>,
    /// Price in US dollars per million answer tokens.
    #[arg(long, value_name = "USD", requires = "price_in")]
    price_out: Option<f64>,
    /// A name for the run (default: the goal's first words).
    #[arg(long)]
    name: Option<String>,
}

impl ModelArgs {
    fn request(self, goal: String, mcp: Vec<String>) -> LlmRunRequest {
        LlmRunRequest {
            mcp,
            goal,
            name: self.name,
            base_url: self.base_url,
            model: self.model,
            key: self.key,
            context_window: self.context_window,
            max_output: self.max_output,
            temperature: self.temperature,
            timeout_s: self.timeout,
            max_turns: self.max_turns,
            price: self.price_in.zip(self.price_out).map(|(i, o)| Price {
                input_per_mtok: i,
                output_per_mtok: o,
            }),
        }
    }
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::api::Result<u8> {
    let printer = Printer::new(json);
    let claude = args.claude.is_some() || args.resume.is_some();
    if !args.env.is_empty() && args.acp.is_none() && !claude {
        return Err(reins_core::api::Error::Invalid(
            "--env sets an external agent's variables: it goes with --acp or --claude".into(),
        ));
    }
    if !args.agent_may_write.is_empty() && args.acp.is_none() && !claude {
        return Err(reins_core::api::Error::Invalid(
            "--agent-may-write widens an external agent's confinement: it goes with --acp or --claude"
                .into(),
        ));
    }
    let req: RunRequest = match (args.plan, args.llm, args.acp) {
        _ if claude => {
            if !json {
                println!("  Claude Code asks Reins before each tool call; cards wait in `reins approvals` and the app");
            }
            args.claude_args
                .request(args.claude, args.resume, args.env, args.agent_may_write)
                .into()
        }
        (Some(plan), _, _) => RunRequest::PlanFile(plan),
        (None, Some(goal), _) => args.model.request(goal, args.mcp).into(),
        (None, None, Some(goal)) => AcpRunRequest {
            goal,
            name: args.model.name,
            agent: args.agent.unwrap_or_default(),
            env: args.env.into_iter().collect(),
            pass_env: Vec::new(),
            may_write: args.agent_may_write,
            idle_timeout_s: args.idle_timeout,
        }
        .into(),
        (None, None, None) => {
            return Err(reins_core::api::Error::Invalid(
                "give --plan FILE, --llm GOAL, --acp GOAL --agent CMD or --claude GOAL".into(),
            ))
        }
    };
    let id = reins
        .create_run_within(req, &args.workspace, args.budget.budget(), &printer)
        .await?;
    if args.queue {
        if !json {
            println!("queued; a worker picks it up (`reins worker`), `reins show {id}` follows it");
        }
        return Ok(exit::DONE);
    }
    let poll = Duration::from_millis(500);
    crate::signals::drain_on_signal(reins.drain_flag());
    loop {
        let waiting = match reins.watching_policy(reins.drive(id, &printer)).await? {
            DriveOutcome::Finished { state, .. } => return Ok(exit_for(state)),
            DriveOutcome::Skipped { state, .. } if state.is_terminal() => {
                return Ok(exit_for(state))
            }
            DriveOutcome::NeedsHuman {
                state: RunState::Paused,
                reason,
            } => {
                if !json {
                    println!("run {id} is paused ({reason})");
                }
                return Ok(exit::NEEDS_HUMAN);
            }
            DriveOutcome::NeedsHuman {
                state: RunState::Suspended,
                ..
            } => {
                // Waiting would look like a hang: the run needs a change (settings, a server, a
                // file) before `reins resume` can help. The reason was printed as it stopped.
                if !json {
                    println!("run {id} is suspended; once the cause is fixed, `reins resume {id}` goes on (details: reins show {id})");
                }
                return Ok(exit::NEEDS_HUMAN);
            }
            DriveOutcome::NeedsHuman { state, .. } => state,
            DriveOutcome::Retrying { at, .. } => {
                let wait = (at - reins_core::api::now_ms()).max(0).unsigned_abs();
                reins
                    .sleep_unless_draining(Duration::from_millis(wait))
                    .await;
                if reins.draining() {
                    return drained_in_backoff(reins, id, json).await;
                }
                continue;
            }
            DriveOutcome::Skipped {
                state: RunState::Queued,
                ..
            } => {
                if reins.draining() {
                    return drained_in_backoff(reins, id, json).await;
                }
                // Waiting out a retry backoff, or claimed and released by someone else.
                reins.sleep_unless_draining(poll).await;
                continue;
            }

            DriveOutcome::Skipped { state, .. } if state.needs_human() => state,
            DriveOutcome::Lost { .. } | DriveOutcome::Skipped { .. } if reins.draining() => {
                return Ok(detached(id, json));
            }
            DriveOutcome::Lost { reason } | DriveOutcome::Skipped { reason, .. } => {
                // Another worker drives it (a `reins worker`, the desktop app): follow it.
                if !json {
                    println!("  another worker is driving this run ({reason}); following it");
                }
                if !follow(reins, id, poll, |s| !s.is_active()).await? {
                    return Ok(detached(id, json));
                }
                continue;
            }
        };
        if args.no_wait {
            if !json && waiting == RunState::AwaitingApproval {
                println!("run {id} stopped at a card and needs a human; once it is decided, a worker (`reins worker`, the app) carries it on\n  see: reins approvals; reins show {id}");
            } else if !json {
                println!("run {id} is {waiting} and needs a human; see: reins show {id}");
            }
            return Ok(exit::NEEDS_HUMAN);
        }
        if waiting == RunState::AwaitingInput
            && !json
            && std::io::stdin().is_terminal()
            && ask_here(reins, id).await?
        {
            continue;
        }
        if !json {
            println!("  waiting for a human (Ctrl-C detaches; the run stays safe in the database)");
        }
        if !follow(reins, id, poll, |s| !s.needs_human()).await? {
            return Ok(detached(id, json));
        }
    }
}

/// Waits until `done(state)`; false when the user asked to stop waiting (Ctrl-C, SIGTERM).
async fn follow(
    reins: &Reins,
    id: reins_core::api::RunId,
    poll: Duration,
    done: fn(RunState) -> bool,
) -> reins_core::api::Result<bool> {
    loop {
        if done(reins.run_state(id).await?) {
            return Ok(true);
        }
        if reins.draining() {
            return Ok(false);
        }
        tokio::time::sleep(poll.min(Duration::from_millis(100))).await;
    }
}

/// A drain while the run waits out a retry backoff: the run is paused where it waits, and the
/// command ends now.
async fn drained_in_backoff(
    reins: &Reins,
    id: reins_core::api::RunId,
    json: bool,
) -> reins_core::api::Result<u8> {
    match reins.pause_backoff_for_drain(id).await? {
        Some(control) => {
            if !json {
                println!("{}", control.message);
            }
            Ok(exit::NEEDS_HUMAN)
        }
        None => Ok(detached(id, json)),
    }
}

fn detached(id: reins_core::api::RunId, json: bool) -> u8 {
    if !json {
        println!("detached from run {id}; it stays safe in the database (see: reins show {id})");
    }
    exit::NEEDS_HUMAN
}

fn exit_for(state: RunState) -> u8 {
    if state == RunState::Succeeded {
        exit::DONE
    } else {
        exit::RUN_FAILED
    }
}

/// On a terminal, the agent's question is answered right here. False when no answer was given
/// (end of input): then the run waits for `reins answer` like any other.
async fn ask_here(reins: &Reins, id: reins_core::api::RunId) -> reins_core::api::Result<bool> {
    let Some((_, question)) = reins.question(id).await? else {
        return Ok(false);
    };
    println!("  ? {question}");
    loop {
        print!("  answer> ");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|n| (n, line))
        })
        .await
        .map_err(|e| reins_core::api::Error::Invalid(e.to_string()))?;
        match line {
            Ok((0, _)) | Err(_) => {
                println!();
                return Ok(false);
            }
            Ok((_, text)) if text.trim().is_empty() => continue,
            Ok((_, text)) => {
                reins.answer(id, &text).await?;
                return Ok(true);
            }
        }
    }
}
