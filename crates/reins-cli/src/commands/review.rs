//! `reins approvals`, `reins approval show ID`, `reins approve ID`, `reins grants`.

use std::io::IsTerminal as _;
use std::path::PathBuf;

use reins_core::api::Error;
use reins_core::api::RunState;
use reins_core::api::Scope;
use reins_core::api::ToolCall;
use reins_core::api::{ApprovalStatus as Status, OnTimeout};
use reins_core::api::{ApprovalView, Reins};
use reins_core::api::{ApproveRequest, DecidedView as Decided, EditedAction, Risk};

use crate::exit;
use crate::output::{print_json, time, Printer};

#[derive(clap::Args)]
pub struct ListArgs {
    /// Every approval, not only the pending ones.
    #[arg(long)]
    all: bool,
    /// Only this run's approvals (id or unique prefix).
    #[arg(long, value_name = "RUN")]
    run: Option<String>,
}

#[derive(clap::Subcommand)]
pub enum ApprovalCommand {
    /// Show one approval: risk and reasons, the context summary, and the exact diff, command or
    /// request (coloured on a terminal).
    Show(ShowArgs),
}

#[derive(clap::Args)]
pub struct ShowArgs {
    /// The approval id, or a unique prefix of it.
    id: String,
    /// Print only the action as JSON ({"tool", "args"}): save it, edit it, and pass it to
    /// `reins approve ID --edit FILE`.
    #[arg(long)]
    action: bool,
}

#[derive(clap::Args)]
pub struct ApproveArgs {
    /// The approval id, or a unique prefix of it; `ID@HASH` binds it to the action hash you saw
    /// (the ACTION column of `reins approvals`). Several at once: each as `ID@HASH`; exactly those
    /// are approved, once each, or none of them if any changed or was decided meanwhile.
    #[arg(required = true, value_name = "ID[@HASH]")]
    ids: Vec<String>,
    /// How far the approval reaches: this once, or a grant for the rest of the run, this workspace,
    /// or always (revocable with `reins grants revoke`).
    #[arg(long, value_enum, default_value_t = ScopeArg::Once)]
    scope: ScopeArg,
    /// Grant a pattern instead of the exact action: `"cargo test"` (a program and argument prefix)
    /// for shell.exec, a path glob like `"docs/**"` for file tools. Needs a lasting --scope; refused
    /// for commands with substitutions, interpreters or several parts.
    #[arg(long, value_name = "PATTERN")]
    pattern: Option<String>,
    /// Approve an edited action instead (JSON {"tool","args"} or just the args; see
    /// `reins approval show ID --action`). The edit is what runs, and both are recorded.
    #[arg(long, value_name = "FILE")]
    edit: Option<PathBuf>,
    /// Run the command with the network this once (it runs without by default). High risk: the
    /// kernel then lets it reach any host. Never a lasting grant.
    #[arg(long, conflicts_with_all = ["unconfined", "edit", "pattern"])]
    with_network: bool,
    /// Run the command outside the sandbox this once: nothing but your review holds it. Never a
    /// lasting grant.
    #[arg(long, conflicts_with_all = ["edit", "pattern"])]
    unconfined: bool,
    /// A staged command's card: leave this file (or folder) out of what lands; repeat for more.
    /// The audit log records what was left out.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["edit", "with_network", "unconfined"])]
    leave_out: Vec<String>,
    /// A note for the record (audit log).
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// Refuse unless the approval's action hash starts with this (what you reviewed elsewhere).
    #[arg(long, value_name = "SHA256")]
    hash: Option<String>,
    /// Carry the run on here until its next stop, instead of leaving it queued for a worker.
    #[arg(long)]
    drive: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ScopeArg {
    Once,
    Run,
    Workspace,
    Always,
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Self {
        match s {
            ScopeArg::Once => Scope::Once,
            ScopeArg::Run => Scope::Run,
            ScopeArg::Workspace => Scope::Workspace,
            ScopeArg::Always => Scope::Always,
        }
    }
}

#[derive(clap::Args)]
pub struct GrantsArgs {
    #[command(subcommand)]
    command: Option<GrantsCommand>,
}

#[derive(clap::Subcommand)]
pub enum GrantsCommand {
    /// Revoke a grant: actions it covered are reviewed again.
    Revoke {
        /// The grant id, or a unique prefix of it.
        id: String,
    },
}

pub(crate) fn who() -> String {
    reins_core::api::face::person(None)
}

pub async fn list(reins: &Reins, args: ListArgs, json: bool) -> reins_core::api::Result<u8> {
    let run = match &args.run {
        Some(r) => Some(reins.resolve_run(r).await?),
        None => None,
    };
    let rows = reins
        .approvals(
            if args.all {
                None
            } else {
                Some(reins_core::api::ApprovalStatus::Pending)
            },
            run,
        )
        .await?;
    if json {
        print_json(&rows);
        return Ok(exit::DONE);
    }
    if rows.is_empty() {
        println!(
            "{}",
            if args.all {
                "no approvals"
            } else {
                "no pending approvals"
            }
        );
        return Ok(exit::DONE);
    }
    println!(
        "{:<36}  {:<8}  {:<18}  {:>4}  {:<10}  {:<6}  {:<10}  {:<12}  FIRST REASON",
        "ID", "RUN", "AGENT", "STEP", "TOOL", "RISK", "STATUS", "ACTION"
    );
    for r in &rows {
        let agent: String = r.agent.chars().take(18).collect();
        let paused = r.status == Status::Pending && r.paused_at.is_some();
        println!(
            "{:<36}  {:<8}  {:<18}  {:>4}  {:<10}  {:<6}  {:<10}  {:<12}  {}",
            r.id,
            &r.run_id.to_string()[..8],
            agent,
            r.step_seq,
            r.tool,
            r.risk,
            if paused { "paused" } else { r.status.as_str() },
            &r.action_hash[..12.min(r.action_hash.len())],
            match &r.staged {
                // What it did, in its own words, before why it needs a person.
                Some(staged) => staged.as_str(),
                None => r.reasons.first().map(String::as_str).unwrap_or(""),
            }
        );
    }
    Ok(exit::DONE)
}

pub async fn show(reins: &Reins, args: ShowArgs, json: bool) -> reins_core::api::Result<u8> {
    let v = reins.approval(&args.id).await?;
    if args.action {
        let action = reins.approval_action(&v.id).await?;
        print_json(&serde_json::json!({ "tool": action.tool, "args": action.args }));
        return Ok(exit::DONE);
    }
    if json {
        print_json(&v);
        return Ok(exit::DONE);
    }
    if v.id != args.id && !v.id.starts_with(&args.id) {
        println!(
            "! approval {} was superseded (a file changed on disk); this is its replacement\n",
            args.id
        );
    }
    print_card(&v);
    Ok(exit::DONE)
}

fn print_card(v: &ApprovalView) {
    let tty = std::io::stdout().is_terminal();
    let paint = |code: &str, s: &str| {
        if tty {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    };
    let r = v;
    let risk = match r.risk {
        Risk::High => paint("1;31", "HIGH"),
        Risk::Medium => paint("33", "MEDIUM"),
        Risk::Low => paint("32", "LOW"),
    };
    println!("approval {}  [{}]  {risk} risk", r.id, r.status);
    println!(
        "  run {}  step {}  {}  (agent: {})",
        r.run_id, r.step_seq, r.tool, r.agent
    );
    println!("  action sha256 {}", r.action_hash);
    let then = match r.on_timeout {
        OnTimeout::Pause => "pauses",
        OnTimeout::Deny => "expires",
    };
    let deadline = match (r.status, r.paused_at) {
        (Status::Pending, Some(at)) => format!("timed out and paused {} (still open)", time(at)),
        _ => format!("{then} {} if undecided", time(r.expires_at)),
    };
    println!("  asked {}  {deadline}", time(r.created_at));
    if let Some(by) = &r.decided_by {
        println!(
            "  decided by {by} at {}{}",
            r.decided_at.map(time).unwrap_or_default(),
            r.note
                .as_deref()
                .map(|n| format!(": {n}"))
                .unwrap_or_default()
        );
    }
    if let Some(why) = &r.stale_reason {
        println!(
            "  superseded by {}: {why}",
            r.superseded_by.as_deref().unwrap_or("?")
        );
    }
    println!("\nwhy it needs you:");
    for reason in &v.reasons {
        println!("  - {reason}");
    }
    println!("\ncontext:");
    let facts: Vec<String> = v
        .facts
        .iter()
        .map(|f| {
            f.fact
                .clone()
                .unwrap_or_else(|| format!("{} (deleted since)", f.id))
        })
        .collect();
    let described = if facts.is_empty() {
        v.context.describe()
    } else {
        format!(
            "{}\nRemembered facts used: {}",
            v.context.describe(),
            facts.join("; ")
        )
    };
    for line in described.lines() {
        println!("  {line}");
    }
    if !v.context.pending.is_empty() && r.status == Status::Pending {
        println!(
            "  (reject them with it: reins reject {} --reason \"…\" --siblings)",
            r.id
        );
    }
    let (title, preview) = match &r.edited {
        Some(e) => (
            "preview (as you edited it; this is what runs):",
            e.preview.as_str(),
        ),
        None if r.staged.is_some() => (
            "what the command did, staged in a copy of the workspace (exactly what approving applies):",
            r.preview.as_str(),
        ),
        None => ("preview (exactly what runs):", r.preview.as_str()),
    };
    println!("\n{title}");
    for line in preview.lines() {
        let colored = if line.starts_with("+++") || line.starts_with("---") {
            paint("1", line)
        } else if line.starts_with('+') {
            paint("32", line)
        } else if line.starts_with('-') {
            paint("31", line)
        } else if line.starts_with("@@") {
            paint("36", line)
        } else if line.trim_start().starts_with("[high]") {
            paint("1;31", line)
        } else {
            line.to_owned()
        };
        println!("  {colored}");
    }
    if let Some(staged) = r.staged.as_ref().filter(|_| r.edited.is_none()) {
        println!("\n{staged}: approving lands these changes; the command does not run again");
    } else if let Some(how) = &r.runs {
        let shown = format!("how it will run: {how}");
        println!(
            "\n{}",
            if how.starts_with("confined") {
                shown
            } else {
                paint("1;33", &shown)
            }
        );
    }
    if r.status == reins_core::api::ApprovalStatus::Pending {
        println!(
            "\ndecide: reins approve {id} [--scope once|run|workspace|always] [--edit FILE]\n        reins reject {id} --reason TEXT",
            id = r.id
        );
    }
}

/// An edit file: `{"tool", "args"}` or just the args (the tool stays the proposed one).
fn read_edit(file: &std::path::Path) -> reins_core::api::Result<EditedAction> {
    let text = reins_core::api::read_input_file(file, reins_core::api::Links::Follow)
        .map_err(|e| Error::Invalid(format!("the edit {} {e}", file.display())))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::Invalid(format!("{} is not JSON: {e}", file.display())))?;
    if value.get("tool").is_some() && value.get("args").is_some() {
        let call: ToolCall = serde_json::from_value(value)
            .map_err(|e| Error::Invalid(format!("{}: {e}", file.display())))?;
        Ok(EditedAction {
            tool: Some(call.tool),
            args: call.args,
        })
    } else {
        Ok(EditedAction {
            tool: None,
            args: value,
        })
    }
}

/// `ID@HASH` split; a bare id has no hash.
fn card_of(text: &str) -> (String, Option<String>) {
    match text.split_once('@') {
        Some((id, hash)) => (id.to_owned(), Some(hash.to_owned())),
        None => (text.to_owned(), None),
    }
}

/// Several cards approved together, each bound to the hash shown, or none.
async fn approve_together(
    reins: &Reins,
    args: ApproveArgs,
    json: bool,
) -> reins_core::api::Result<u8> {
    let one_at_a_time = args.edit.is_some()
        || args.pattern.is_some()
        || args.with_network
        || args.unconfined
        || args.hash.is_some()
        || args.drive
        || !matches!(args.scope, ScopeArg::Once);
    if one_at_a_time {
        return Err(Error::Invalid(
            "several cards are approved once each, as shown: --scope, --pattern, --edit, --with-network, --unconfined, --hash and --drive take one card".into(),
        ));
    }
    let mut cards = Vec::new();
    for text in &args.ids {
        let (id, hash) = card_of(text);
        let Some(action_hash) = hash.filter(|h| h.len() >= 8) else {
            return Err(Error::Invalid(format!(
                "{text}: give each card as ID@HASH, with the ACTION hash `reins approvals` showed (at least 8 characters): the approval is bound to what you saw"
            )));
        };
        cards.push(reins_core::api::Shown { id, action_hash });
    }
    let decided = reins
        .approve_batch(&cards, &who(), args.note.as_deref())
        .await?;
    if json {
        print_json(&decided);
        return Ok(exit::DONE);
    }
    println!("approved {} cards together, once each:", decided.len());
    for d in &decided {
        let a = &d.approval;
        println!(
            "  {} step {} ({}) of run {}: run {}",
            a.id, a.step_seq, a.tool, d.run, d.run_state
        );
    }
    if decided.iter().any(|d| d.run_state == RunState::Queued) {
        println!("  queued runs carry them out when a `reins run` following them or a `reins worker` picks them up");
    }
    Ok(exit::DONE)
}

pub async fn approve(
    reins: &Reins,
    mut args: ApproveArgs,
    json: bool,
) -> reins_core::api::Result<u8> {
    if args.ids.len() > 1 {
        if !args.leave_out.is_empty() {
            return Err(Error::Invalid(
                "--leave-out is for one staged card at a time".into(),
            ));
        }
        return approve_together(reins, args, json).await;
    }
    let (id, shown) = card_of(args.ids.first().map(String::as_str).unwrap_or_default());
    if shown.is_some() && args.hash.is_some() {
        return Err(Error::Invalid(
            "give the hash once: ID@HASH or --hash".into(),
        ));
    }
    args.hash = args.hash.or(shown);
    let mut edited = args.edit.as_deref().map(read_edit).transpose()?;
    let sandbox = if args.with_network {
        Some(reins_core::api::Sandbox::Network)
    } else if args.unconfined {
        Some(reins_core::api::Sandbox::Unconfined)
    } else {
        None
    };
    if let Some(sandbox) = sandbox {
        let card = reins.approval(&id).await?;
        edited = Some(EditedAction::sandboxed(
            &card.action.tool,
            &card.action.args,
            sandbox,
        )?);
    }
    let decided = reins
        .approve(
            &id,
            ApproveRequest {
                scope: args.scope.into(),
                pattern: args.pattern,
                edited,
                note: args.note,
                expect_hash: args.hash,
                by: who(),
                leave_out: args.leave_out,
            },
        )
        .await?;
    if !json {
        let a = &decided.approval;
        let edited = if a.edited.is_some() {
            " (edited: the edit is what runs)"
        } else {
            ""
        };
        println!(
            "approved {} for step {} ({}){edited}, scope {}",
            a.id,
            a.step_seq,
            a.tool,
            a.scope.map_or("once", |s| s.as_str())
        );
        if let Some(staged) = a.staged.as_ref().filter(|s| s.contains("left out")) {
            println!("  {staged}");
        }
        if let Some(e) = &a.edited {
            let risk = e.risk.map_or("unknown".to_owned(), |r| r.to_string());
            println!("  your edit is rated {} risk:", risk.to_uppercase());
            for r in &e.reasons {
                println!("    - {r}");
            }
        }
        if let Some(g) = &decided.grant {
            println!(
                "  grant {}: {} {} {} (revoke: reins grants revoke {})",
                g.id,
                g.scope,
                g.tool,
                grant_pattern(g),
                g.id
            );
        }
    }
    after_decision(reins, &decided, args.drive, json).await
}

pub(super) async fn after_decision(
    reins: &Reins,
    decided: &Decided,
    drive: bool,
    json: bool,
) -> reins_core::api::Result<u8> {
    if json {
        print_json(decided);
    }
    match decided.run_state {
        RunState::Queued if drive => {
            let printer = Printer::new(json);
            let outcome = reins.drive(decided.run, &printer).await?;
            Ok(match outcome {
                reins_core::api::DriveOutcome::Finished {
                    state: RunState::Succeeded,
                    ..
                } => exit::DONE,
                reins_core::api::DriveOutcome::Finished { .. } => exit::RUN_FAILED,
                _ => exit::NEEDS_HUMAN,
            })
        }
        RunState::Queued => {
            if !json {
                println!(
                    "  run {} is queued to carry it out: a `reins run` following it or a `reins worker` picks it up (or add --drive)",
                    decided.run
                );
            }
            Ok(exit::DONE)
        }
        other => {
            if !json {
                println!(
                    "  run {} is {other}; the decision is carried out when it resumes",
                    decided.run
                );
            }
            Ok(exit::DONE)
        }
    }
}

pub async fn grants(reins: &Reins, args: GrantsArgs, json: bool) -> reins_core::api::Result<u8> {
    if let Some(GrantsCommand::Revoke { id }) = args.command {
        let g = reins.revoke_grant(&id).await?;
        if json {
            print_json(&g);
        } else {
            println!(
                "revoked grant {} ({} {} {}; used {} times)",
                g.id, g.scope, g.tool, g.pattern, g.uses
            );
        }
        return Ok(exit::DONE);
    }
    let rows = reins.grants().await?;
    if json {
        print_json(&rows);
        return Ok(exit::DONE);
    }
    if rows.is_empty() {
        println!("no grants; `reins approve ID --scope run|workspace|always` creates one");
        return Ok(exit::DONE);
    }
    println!(
        "{:<36}  {:<9}  {:<10}  {:<6}  {:>4}  {:<8}  {:<36}  PATTERN",
        "ID", "SCOPE", "TOOL", "MATCH", "USES", "STATE", "FROM APPROVAL"
    );
    for g in rows {
        let pattern = if g.matcher == reins_core::api::Matcher::Exact {
            format!("action {}", &g.pattern[..12.min(g.pattern.len())])
        } else {
            grant_pattern(&g)
        };
        println!(
            "{:<36}  {:<9}  {:<10}  {:<6}  {:>4}  {:<8}  {:<36}  {pattern}",
            g.id,
            g.scope,
            g.tool,
            g.matcher,
            g.uses,
            if g.revoked_at.is_some() {
                "revoked"
            } else {
                "live"
            },
            g.origin
        );
    }
    Ok(exit::DONE)
}

/// A grant's pattern as people read it: a command prefix says which options it allows.
fn grant_pattern(g: &reins_core::api::GrantView) -> String {
    match g.matcher {
        reins_core::api::Matcher::Prefix if g.options.is_empty() => {
            format!("{} (no further options)", g.pattern)
        }
        reins_core::api::Matcher::Prefix => {
            format!("{} (options: {})", g.pattern, g.options.join(" "))
        }
        _ => g.pattern.clone(),
    }
}
