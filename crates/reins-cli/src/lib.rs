//! `reins`: run agents under the harness from a terminal. Every subcommand is a thin adapter over
//! `reins_core::api`; this crate adds argument parsing, terminal output and exit codes only.
//! [`main`] is the whole command: the `reins` binary calls it, and so does the desktop app when it
//! is started under the name `reins` (the package installs one program under both names).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use reins_core::api::DataDir;
use reins_core::api::{Options, Reins};

mod commands;
mod output;
mod signals;

/// Exit statuses, stable for scripts.
pub mod exit {
    pub const DONE: u8 = 0;
    pub const RUN_FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NEEDS_HUMAN: u8 = 3;
}

#[derive(Parser)]
#[command(
    name = "reins",
    version,
    about = "Run AI agents on your machine under a harness: durable checkpoints, crash recovery that never repeats a side effect, rollback.",
    after_help = "Exit status: 0 done, 1 run failed (or a harness error), 2 usage or input error, 3 waiting for a human.\n\
                  Data lives in the platform data dir (e.g. ~/.local/share/reins) unless --data-dir or REINS_DATA_DIR says otherwise."
)]
struct Cli {
    /// Where the database and blob store live.
    #[arg(long, global = true, env = "REINS_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,

    /// Team mode: a shared PostgreSQL database instead of the SQLite file in the data dir, e.g.
    /// `postgres://USER@HOST:PORT/DB?sslmode=verify-full&sslrootcert=/etc/reins/team-ca.pem`
    /// (TLS, the server's certificate checked against the team's CA and its name).
    /// The password comes from PostgreSQL's own places (~/.pgpass, PGPASSWORD), not from a file
    /// Reins writes. The data dir still holds this machine's audit head anchor and logs.
    #[arg(
        long,
        global = true,
        env = "REINS_DATABASE_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    database_url: Option<String>,

    /// Team mode: read the database password from the OS keyring entry NAME (store it with
    /// `reins keys set NAME`), so it is in no file and no environment. The URL names the user only.
    #[arg(
        long,
        global = true,
        env = "REINS_DATABASE_PASSWORD_KEY",
        value_name = "NAME"
    )]
    database_password_key: Option<String>,

    /// Print machine-readable JSON instead of text (stable field names, camelCase).
    #[arg(long, global = true)]
    json: bool,

    /// How long a worker owns a run without renewing its lease (a heartbeat renews it every third)
    /// before another process may take it over.
    #[arg(
        long,
        global = true,
        env = "REINS_LEASE_SECS",
        value_name = "SECS",
        default_value_t = 30
    )]
    lease_secs: u32,

    /// How many retries a run may use (transient failures and workers lost under it) before it
    /// waits for a person.
    #[arg(
        long,
        global = true,
        env = "REINS_RETRY_MAX",
        value_name = "N",
        default_value_t = 10
    )]
    retry_max: u32,

    /// Retries stop this long after a run's first one.
    #[arg(
        long,
        global = true,
        env = "REINS_RETRY_WINDOW_SECS",
        value_name = "SECS",
        default_value_t = 3600
    )]
    retry_window_secs: u32,

    /// The policy file (TOML rules); default `policy.toml` in the config dir (`reins policy path`).
    #[arg(long, global = true, env = "REINS_POLICY", value_name = "FILE")]
    policy: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a run on a workspace folder — a plan file (--plan), the LLM agent on a goal (--llm) or
    /// an external agent (--acp GOAL --agent CMD) — and drive it, printing a line per step and the
    /// agent's text as it streams.
    Run(Box<commands::run::Args>),
    /// External agents (ACP) registered by name: add, list, remove.
    #[command(subcommand)]
    Agents(commands::agents::AgentsCommand),
    /// MCP servers whose tools the LLM agent may be offered (`run --llm GOAL --mcp NAME`): add,
    /// list, tools, remove; and `serve`, Reins' own memory as an MCP server for other agents.
    #[command(subcommand)]
    Mcp(commands::mcp::McpCommand),
    /// What a run may spend and has spent; at its limit, allow more or stop it there; and the
    /// default budget new runs get: show, allow, stop, default.
    #[command(subcommand)]
    Budget(commands::budget::BudgetCommand),
    /// Answer the question an agent asked (`ask_user`); without TEXT, show it.
    Answer(commands::answer::Args),
    /// API keys for model servers, kept only in the OS keyring: set, status, delete.
    #[command(subcommand)]
    Keys(commands::keys::KeysCommand),
    /// Drive every runnable run (queued, or abandoned by a crashed worker).
    Worker(commands::worker::Args),
    /// List runs, newest first.
    Ps,
    /// Show one run: state, steps, checkpoints (with checksum status), intents, recovery point.
    Show(commands::show::Args),
    /// Pause a run: it stops at its next safe point, after writing and verifying a checkpoint.
    Pause(commands::control::PauseArgs),
    /// Resume a paused or suspended run (or withdraw a pause not yet reached).
    Resume(commands::control::ResumeArgs),
    /// Decide an effect whose outcome is unknown (after a crash or a part-way failure): --done,
    /// --retry or --skip. Never decided automatically.
    Resolve(commands::control::ResolveArgs),
    /// Cancel a run for good. Its files stay as they are; `reins rollback` can restore them.
    Cancel(commands::control::CancelArgs),
    /// Restore the files a run touched to their state at a checkpoint (undoable).
    Rollback(commands::rollback::Args),
    /// Check the database, blob store, checkpoints and audit chain, and whether the model server
    /// answers.
    Doctor(commands::doctor::Args),
    /// Retention: keep the last N checkpoints of finished runs, remove blobs nothing needs.
    Gc(commands::gc::Args),
    /// List actions waiting for your review (pending by default).
    Approvals(commands::review::ListArgs),
    /// Look at one approval.
    #[command(subcommand)]
    Approval(commands::review::ApprovalCommand),
    /// Approve a pending action (optionally edited, optionally with a lasting grant).
    Approve(commands::review::ApproveArgs),
    /// Reject a pending action; the agent is told your reason.
    Reject(commands::reject::Args),
    /// List grants (standing approvals) with their origin and use count; `grants revoke ID`.
    Grants(commands::review::GrantsArgs),
    /// Run a command against a copy-on-write view of a workspace, confined and without network,
    /// and see what it would change (every file, with its diff); nothing is applied.
    Stage(commands::stage::Args),
    /// Explain policy decisions without running anything.
    #[command(subcommand)]
    Policy(commands::policy::PolicyCommand),
    /// The tamper-evident audit log: verify it, export it (JSONL or CSV), check an export, list it.
    #[command(subcommand)]
    Audit(commands::audit::AuditCommand),
    /// Long-term profile memory: list, show, add, edit, delete, clear facts; review agents'
    /// suggestions; switch memory off and on.
    #[command(subcommand)]
    Memory(commands::memory::MemoryCommand),
    /// Claude Code's hooks: install or uninstall Reins' entries in its settings.
    #[command(subcommand)]
    Hooks(commands::hook::HooksCommand),
    /// What Claude Code runs before and after each tool call (installed by `reins hooks install`):
    /// the hook's JSON on stdin, Reins' decision on stdout; any error exits 2, blocking the call.
    #[command(subcommand)]
    Hook(commands::hook::HookCommand),
    /// OpenTelemetry export of runs, model and tool calls, and reviews (off by default): status,
    /// flush. See docs/observability.md.
    #[command(subcommand)]
    Otel(commands::otel::OtelCommand),
    /// Approve from a browser or a phone: the inbox over HTTP (127.0.0.1 by default) for paired
    /// devices; `serve pair`, `serve devices`, `serve revoke`.
    Serve(commands::serve::Args),
}

/// The program external agents start as Reins' memory server (`reins mcp serve`): this one when it
/// is called `reins`; else the `reins` beside it. Installed, `/usr/bin/reins` is a link to the app,
/// and the link's target by its own name would open the window instead.
fn memory_server() -> Option<PathBuf> {
    this_program()
}

/// This program as `reins`: itself when it is called so, else the `reins` beside it.
pub(crate) fn this_program() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    if exe.file_name().is_some_and(|n| n == "reins") {
        return Some(exe);
    }
    let beside = exe.parent()?.join("reins");
    beside.is_file().then_some(beside)
}

/// The `reins` command, from the process's arguments to its exit status.
pub fn main() -> ExitCode {
    if let Some(code) = reins_core::api::contain_helper() {
        return code;
    }
    reins_core::api::contain_with_this_binary();
    // `reins … | head`: a closed stdout ends the process quietly, as for any Unix tool.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.contains("failed printing to stdout") && text.contains("Broken pipe") {
            std::process::exit(141);
        }
        default_hook(info);
    }));
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("REINS_LOG")
                // The ACP library warns of every request an agent sends that Reins does not
                // implement (answered "method not found", as the protocol wants): not news.
                .unwrap_or_else(|_| "warn,agent_client_protocol=error,rmcp=error".into()),
        )
        .with_writer(output::RedactedStderr)
        .init();
    let cli = Cli::parse();
    if matches!(cli.command, Command::Hook(_)) {
        // A hook that panics must still block the call: Claude Code lets it through on anything
        // but exit 2.
        std::panic::set_hook(Box::new(|info| {
            eprintln!("Reins blocked this tool call: internal error: {info}");
            std::process::exit(i32::from(commands::hook::BLOCK));
        }));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            if matches!(cli.command, Command::Hook(_)) {
                return ExitCode::from(commands::hook::blocked(&format!(
                    "cannot start the async runtime: {e}"
                )));
            }
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::RUN_FAILED);
        }
    };
    ExitCode::from(runtime.block_on(dispatch(cli)))
}

async fn dispatch(cli: Cli) -> u8 {
    let json = cli.json;
    // Checking an export needs no database (it may come from another machine).
    if let Command::Audit(commands::audit::AuditCommand::VerifyExport(args)) = &cli.command {
        return match commands::audit::verify_export(args, json) {
            Ok(code) => code,
            Err(e) => output::fail(&e, json),
        };
    }
    // The memory relay runs inside a confined agent, where Reins' data dir is out of reach.
    if let Command::Mcp(commands::mcp::McpCommand::Relay(args)) = &cli.command {
        return match reins_core::api::relay_memory(args.port).await {
            Ok(()) => exit::DONE,
            Err(e) => output::fail(&e, json),
        };
    }
    if let Command::Hook(cmd) = cli.command {
        // One connection: a hook does one thing at a time, and Claude Code waits for it.
        let opening = open_with(
            cli.data_dir,
            Team {
                database_url: cli.database_url,
                password_key: cli.database_password_key,
                workspace_roots: Vec::new(),
                adopt_legacy: false,
            },
            cli.lease_secs,
            cli.retry_max,
            cli.retry_window_secs,
            cli.policy,
            1,
        );
        return commands::hook::exec(opening, cmd).await;
    }
    let reins = match open(&cli).await {
        Ok(r) => r,
        Err(e) => return output::fail(&e, json),
    };
    // Long-lived faces follow the audit log and send spans, when export is on.
    let follower = if matches!(
        cli.command,
        Command::Run(_) | Command::Worker(_) | Command::Serve(_)
    ) {
        match reins.follow_telemetry().await {
            Ok(f) => f,
            Err(e) => return output::fail(&e, json),
        }
    } else {
        None
    };
    if let Command::Serve(args) = cli.command {
        let reins = std::sync::Arc::new(reins);
        let result = commands::serve::exec(std::sync::Arc::clone(&reins), args, json).await;
        if let Some(f) = follower {
            f.stop().await;
        }
        reins.close().await;
        return match result {
            Ok(code) => code,
            Err(e) => output::fail(&e, json),
        };
    }
    let result = match cli.command {
        Command::Run(args) => commands::run::exec(&reins, *args, json).await,
        Command::Worker(args) => commands::worker::exec(&reins, args, json).await,
        Command::Agents(cmd) => commands::agents::exec(&reins, cmd, json).await,
        Command::Mcp(cmd) => commands::mcp::exec(&reins, cmd, json).await,
        Command::Answer(args) => commands::answer::exec(&reins, args, json).await,
        Command::Budget(cmd) => commands::budget::exec(&reins, cmd, json).await,
        Command::Keys(cmd) => commands::keys::exec(&reins, cmd, json).await,
        Command::Ps => commands::ps::exec(&reins, json).await,
        Command::Show(args) => commands::show::exec(&reins, args, json).await,
        Command::Pause(args) => commands::control::pause(&reins, args, json).await,
        Command::Resume(args) => commands::control::resume(&reins, args, json).await,
        Command::Resolve(args) => commands::control::resolve(&reins, args, json).await,
        Command::Cancel(args) => commands::control::cancel(&reins, args, json).await,
        Command::Rollback(args) => commands::rollback::exec(&reins, args, json).await,
        Command::Doctor(args) => commands::doctor::exec(&reins, args, json).await,
        Command::Gc(args) => commands::gc::exec(&reins, args, json).await,
        Command::Approvals(args) => commands::review::list(&reins, args, json).await,
        Command::Approval(commands::review::ApprovalCommand::Show(args)) => {
            commands::review::show(&reins, args, json).await
        }
        Command::Approve(args) => commands::review::approve(&reins, args, json).await,
        Command::Reject(args) => commands::reject::exec(&reins, args, json).await,
        Command::Grants(args) => commands::review::grants(&reins, args, json).await,
        Command::Policy(cmd) => commands::policy::exec(&reins, cmd, json).await,
        Command::Stage(args) => commands::stage::exec(&reins, args, json).await,
        Command::Audit(cmd) => commands::audit::exec(&reins, cmd, json).await,
        Command::Memory(cmd) => commands::memory::exec(&reins, cmd, json).await,
        Command::Hooks(cmd) => commands::hook::hooks(&reins, cmd, json).await,
        Command::Otel(cmd) => commands::otel::exec(&reins, cmd, json).await,
        Command::Hook(_) | Command::Serve(_) => Ok(exit::USAGE),
    };
    if let Some(f) = follower {
        f.stop().await;
    }
    reins.close().await;
    match result {
        Ok(code) => code,
        Err(e) => output::fail(&e, json),
    }
}

async fn open(cli: &Cli) -> reins_core::api::Result<Reins> {
    let (roots, adopt_legacy) = match &cli.command {
        Command::Worker(args) => (
            commands::worker::roots(&args.workspace_roots)?,
            args.adopt_legacy,
        ),
        _ => (Vec::new(), false),
    };
    open_with(
        cli.data_dir.clone(),
        Team {
            database_url: cli.database_url.clone(),
            password_key: cli.database_password_key.clone(),
            workspace_roots: roots,
            adopt_legacy,
        },
        cli.lease_secs,
        cli.retry_max,
        cli.retry_window_secs,
        cli.policy.clone(),
        reins_core::api::DEFAULT_CONNECTIONS,
    )
    .await
}

/// Team mode's part of opening: the shared database, and the workspaces a worker reaches.
struct Team {
    database_url: Option<String>,
    /// The keyring entry holding the database password.
    password_key: Option<String>,
    workspace_roots: Vec<PathBuf>,
    /// Carry out runs that name no machine.
    adopt_legacy: bool,
}

async fn open_with(
    data_dir: Option<PathBuf>,
    team: Team,
    lease_secs: u32,
    retry_max: u32,
    retry_window_secs: u32,
    policy: Option<PathBuf>,
    connections: u32,
) -> reins_core::api::Result<Reins> {
    let data_dir = DataDir::resolve(data_dir)?;
    // Without --database-url or REINS_DATABASE_URL, the team database the app's Settings chose
    // (if any): the CLI and the app on one machine see the same runs and the same inbox.
    let (database, password_key) = match team.database_url.filter(|url| !url.trim().is_empty()) {
        Some(url) => (Some(url), team.password_key),
        None => match reins_core::api::saved_team_database()? {
            Some(saved) => (Some(saved.url), team.password_key.or(saved.password_key)),
            None => (None, team.password_key),
        },
    };
    Reins::open(
        data_dir,
        Options {
            lease_ms: i64::from(lease_secs.max(1)) * 1000,
            retry: reins_core::api::RetryBudget {
                max_retries: retry_max,
                window_ms: i64::from(retry_window_secs) * 1000,
                ..Default::default()
            },
            policy_file: policy,
            // External agents reach the profile memory through this very program.
            memory_server: memory_server(),
            connections,
            database,
            workspace_roots: team.workspace_roots,
            adopt_legacy: team.adopt_legacy,
            database_password_key: password_key.filter(|name| !name.trim().is_empty()),
            ..Options::default()
        },
    )
    .await
}
