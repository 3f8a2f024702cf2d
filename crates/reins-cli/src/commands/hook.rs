//! `reins hook claude-code`: what Claude Code runs before and after each tool call, once Reins'
//! hooks are installed (`reins hooks install claude-code`). It reads the hook's JSON on stdin and,
//! before a call, prints Reins' decision (allow, or deny with the reasons the model reads),
//! waiting for a person when the policy asks for a review. It fails closed: Claude Code lets a
//! call through when a hook exits 1, crashes or times out, so every error here — a store that
//! cannot be opened, input that cannot be read, a panic — exits 2, which blocks the call, with one
//! line on stderr saying why.
//!
//! `reins hooks install|uninstall claude-code`: adds Reins' entries to Claude Code's settings, or
//! takes them out, leaving everything else as it was.

use std::io::Read as _;
use std::path::PathBuf;
use std::time::Duration;

use reins_core::api::{self, Reins, SettingsScope};

use crate::exit;

/// Claude Code's exit status for "block this call".
pub const BLOCK: u8 = api::HOOK_BLOCK;

#[derive(clap::Subcommand)]
pub enum HookCommand {
    /// Answer one Claude Code hook call: its JSON on stdin, Reins' decision on stdout.
    #[command(name = "claude-code")]
    ClaudeCode(HookArgs),
}

#[derive(clap::Args)]
pub struct HookArgs {
    /// Longest wait for a person, in seconds; past it the call is denied (and its card expired).
    /// Keep it under the hook's timeout in Claude Code's settings (600 s as installed).
    #[arg(long, value_name = "SECS", default_value_t = api::DEFAULT_HOOK_DEADLINE.as_secs())]
    deadline: u64,
    /// The hook Reins gives a Claude Code it runs headless (`reins run --claude`): a call a person
    /// must decide is answered "ask", and waits on Claude Code's control channel.
    #[arg(long, hide = true)]
    headless: bool,
    /// The hook inside a confined headless Claude Code: the call goes over Reins' link on this
    /// port (token in REINS_HOOK_TOKEN) to the Reins that started it, which judges it.
    #[arg(long, hide = true, value_name = "PORT", requires = "headless")]
    link: Option<u16>,
}

/// Runs the hook: stdin to stdout, and the exit status Claude Code acts on.
pub async fn exec(
    open: impl std::future::Future<Output = api::Result<Reins>>,
    cmd: HookCommand,
) -> u8 {
    let HookCommand::ClaudeCode(args) = cmd;
    // Every call redacts what it records; the patterns build on the other core meanwhile.
    std::thread::spawn(api::prepare_secret_patterns);
    let mut text = String::new();
    if let Err(e) = std::io::stdin()
        .take(reins_core::api::MAX_HOOK_INPUT as u64 + 1)
        .read_to_string(&mut text)
    {
        return blocked(&format!("cannot read the hook's input: {e}"));
    }
    if let Some(port) = args.link {
        return over_link(port, &text).await;
    }
    let reins = match open.await {
        Ok(r) => r,
        Err(e) => return blocked(&format!("cannot open Reins' store: {e}")),
    };
    const KIND: &str = "claude-code";
    let outcome = reins
        .hook(
            KIND,
            &text,
            Duration::from_secs(args.deadline),
            args.headless,
        )
        .await;
    reins.close().await;
    let answer = outcome.and_then(|o| o.answer.map(|a| Reins::hook_output(KIND, &a)).transpose());
    match answer {
        Ok(Some(output)) => {
            println!("{output}");
            exit::DONE
        }
        Ok(None) => exit::DONE,
        Err(e) => blocked(&e.to_string()),
    }
}

/// The hook inside the sandbox: what the real hook printed, and its exit status.
async fn over_link(port: u16, text: &str) -> u8 {
    match api::hook_over_link(port, text).await {
        Ok(reply) => {
            print!("{}", reply.stdout);
            eprint!("{}", reply.stderr);
            reply.status
        }
        Err(e) => blocked(&e.to_string()),
    }
}

/// Blocks the call: one line for Claude Code (which shows it to the model), exit 2.
pub fn blocked(why: &str) -> u8 {
    eprintln!("{}", api::hook_blocked_said(why));
    BLOCK
}

#[derive(clap::Subcommand)]
pub enum HooksCommand {
    /// Add Reins' hooks to Claude Code's settings (the project's by default), keeping the rest.
    Install(HooksArgs),
    /// Take Reins' hooks out of Claude Code's settings, and nothing else.
    Uninstall(HooksArgs),
    /// Whether Claude Code started in the project would call Reins: where Reins' hooks are, and
    /// any settings file that switches hooks off (a repository's `disableAllHooks`). Exits 1 when
    /// something does.
    Status(HooksArgs),
}

#[derive(clap::Args)]
pub struct HooksArgs {
    /// The agent whose hooks these are (only `claude-code` for now).
    #[arg(value_parser = ["claude-code"])]
    agent: String,
    /// The project folder: its `.claude/settings.local.json` (default: the current folder).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    project: Option<PathBuf>,
    /// Every project of this user: `~/.claude/settings.json`.
    #[arg(long, conflicts_with = "managed")]
    user: bool,
    /// Every user and project of this machine, in Claude Code's managed settings
    /// (`/etc/claude-code/managed-settings.d/50-reins.json`, as root): no project or user setting
    /// can switch these hooks off.
    #[arg(long, conflicts_with = "project")]
    managed: bool,
    /// Print the change without writing it.
    #[arg(long)]
    dry_run: bool,
}

pub async fn hooks(reins: &Reins, cmd: HooksCommand, json: bool) -> api::Result<u8> {
    let (install, args) = match cmd {
        HooksCommand::Install(a) => (true, a),
        HooksCommand::Uninstall(a) => (false, a),
        HooksCommand::Status(a) => return status(&scope_of(&a)?, json),
    };
    let _ = &args.agent;
    let scope = scope_of(&args)?;
    let change = if install {
        let program = crate::this_program().ok_or_else(|| {
            api::Error::Invalid("cannot tell where the `reins` program is".into())
        })?;
        api::claude_hooks_install(&scope, &reins.claude_hook_command(&program))?
    } else {
        api::claude_hooks_uninstall(&scope)?
    };
    let changed = change.changes_anything();
    if changed && !args.dry_run {
        api::write_settings(&change)?;
    }
    let file = change.path.display().to_string();
    if json {
        crate::output::print_json(&serde_json::json!({
            "file": file, "changed": changed, "written": changed && !args.dry_run,
            "diff": change.diff(),
        }));
    } else if !changed {
        println!(
            "{file}: nothing to change (Reins' hooks are {})",
            if install {
                "already there"
            } else {
                "not there"
            }
        );
    } else if args.dry_run {
        print!("{}", change.diff());
        println!("(dry run: {file} is unchanged)");
    } else if install {
        let (reach, flag) = if args.managed {
            ("machine", " --managed")
        } else if args.user {
            ("user's projects", " --user")
        } else {
            ("project", "")
        };
        println!(
            "Reins' hooks are in {file}; `reins hooks uninstall claude-code{flag}` takes them out."
        );
        let warnings = api::claude_hooks_view(&scope)?.warnings;
        if warnings.is_empty() {
            println!("Claude Code started in this {reach} now asks Reins before each tool call.");
        }
        // Installed where a settings file switches them off: say so now, not after the fact.
        for warning in warnings {
            eprintln!("WARNING: {warning}");
        }
    } else {
        println!("Reins' hooks are out of {file}; the rest of it is as it was.");
    }
    Ok(exit::DONE)
}

fn scope_of(args: &HooksArgs) -> api::Result<SettingsScope> {
    if args.managed {
        return Ok(api::claude_managed_scope());
    }
    if args.user {
        return api::claude_user_scope();
    }
    let dir = match &args.project {
        Some(d) => d.clone(),
        None => std::env::current_dir()
            .map_err(|e| api::Error::Invalid(format!("no current folder: {e}")))?,
    };
    let dir = dir
        .canonicalize()
        .map_err(|e| api::Error::Invalid(format!("the project folder {}: {e}", dir.display())))?;
    Ok(SettingsScope::Project(dir))
}

/// `reins hooks status`: where Reins' hooks are and what switches them off; exit 1 when anything
/// does, or when they are nowhere.
fn status(scope: &SettingsScope, json: bool) -> api::Result<u8> {
    let view = api::claude_hooks_view(scope)?;
    let managed = api::claude_hooks_view(&api::claude_managed_scope())?;
    let heard =
        (view.installed.is_some() || managed.installed.is_some()) && view.warnings.is_empty();
    if json {
        crate::output::print_json(&serde_json::json!({
            "claude": view.claude, "file": view.file, "installed": view.installed,
            "managed": managed.installed.map(|_| managed.file), "warnings": view.warnings,
            "heard": heard,
        }));
    } else {
        match &view.claude {
            Some(p) => println!("claude: {p}"),
            None => println!("claude: not on PATH (the hooks work once it is)"),
        }
        let state = if view.installed.is_some() {
            "installed"
        } else {
            "not installed"
        };
        println!("{}: Reins' hooks {state}", view.file);
        if managed.installed.is_some() {
            println!("{}: Reins' hooks installed (managed: no project or user setting can switch them off)", managed.file);
        }
        for warning in &view.warnings {
            println!("WARNING: {warning}");
        }
        if heard {
            println!("Claude Code started here asks Reins before each tool call.");
        } else if view.warnings.is_empty() {
            println!("Claude Code started here does not call Reins: `reins hooks install claude-code` puts the hooks in.");
        } else {
            println!("Claude Code started here does NOT call Reins.");
        }
    }
    Ok(if heard { exit::DONE } else { 1 })
}
