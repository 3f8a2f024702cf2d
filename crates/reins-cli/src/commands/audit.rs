//! `reins audit verify | export | verify-export | list`

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;

use reins_core::api::Error;
use reins_core::api::Reins;
use reins_core::api::{AuditFilter as Filter, ExportFormat, ExportRequest, PageRequest};

use crate::exit;
use crate::output::{print_json, table, time};

#[derive(clap::Subcommand)]
pub enum AuditCommand {
    /// Walk the hash chain and compare it with the head anchor kept beside the database, and check
    /// each event's MAC against this machine's audit key in the OS keyring. Names the first bad
    /// seq and the damage (edited, deleted, reordered, truncated, replaced, forged, unvouched, an
    /// anchor made again or events it never saw). Exit 0 only when the log is intact (1 when not).
    Verify,
    /// Accept that the head anchor was made again after it went missing (you moved it aside, or
    /// restored a backup): verification stops failing on that. Recorded in the log as yours.
    AcknowledgeAnchor,
    /// Accept the events that no key of this machine vouches for: appended by a Reins process that
    /// could not reach the OS keyring, or under another machine's key (a data dir brought from
    /// elsewhere). Verification stops failing on them. Recorded in the log as yours, under the key.
    AcceptUnvouched,
    /// Write events to a JSONL (verifiable, ends with a manifest line) or CSV file, atomically.
    Export(ExportArgs),
    /// Check a JSONL export on its own (no database needed). Exit 0 only when it holds.
    VerifyExport(VerifyExportArgs),
    /// Page through the log, newest first.
    List(ListArgs),
}

#[derive(clap::Args)]
pub struct FilterArgs {
    /// Only this run's events (id or unique prefix).
    #[arg(long, value_name = "RUN")]
    run: Option<String>,
    /// An exact kind (`approval.approved`) or a family (`approval`).
    #[arg(long, value_name = "KIND")]
    kind: Option<String>,
    /// user, agent, harness or system.
    #[arg(long, value_name = "ACTOR")]
    actor: Option<String>,
    /// From this time on: RFC 3339 (`2026-11-29T10:00:00Z`), a UTC date (`2026-11-29`), or an
    /// age (`90m`, `2h`, `7d`).
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// Before this time (same forms as --since).
    #[arg(long, value_name = "TIME")]
    until: Option<String>,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// jsonl: one event per line and a closing manifest, checkable with `verify-export`; csv: a
    /// header row and the columns seq,time,at_ms,actor,kind,run_id,step_seq,approval_id,payload,
    /// prev_hash,hash,redacted.
    #[arg(long, value_enum, default_value = "jsonl")]
    format: FormatArg,
    /// The file to write (its folder must exist).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Replace FILE if it exists (otherwise an existing file is an error).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    filter: FilterArgs,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FormatArg {
    Jsonl,
    Csv,
}

#[derive(clap::Args)]
pub struct VerifyExportArgs {
    /// A JSONL file written by `reins audit export`.
    file: PathBuf,
}

#[derive(clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    filter: FilterArgs,
    /// Events per page (1–10000).
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Only events before this seq (the `next` the previous page printed).
    #[arg(long, value_name = "SEQ")]
    before: Option<i64>,
}

pub async fn exec(reins: &Reins, cmd: AuditCommand, json: bool) -> reins_core::api::Result<u8> {
    match cmd {
        AuditCommand::Verify => verify(reins, json).await,
        AuditCommand::AcknowledgeAnchor => acknowledge_anchor(reins, json).await,
        AuditCommand::AcceptUnvouched => accept_unvouched(reins, json).await,
        AuditCommand::Export(args) => export(reins, args, json).await,
        AuditCommand::VerifyExport(args) => verify_export(&args, json),
        AuditCommand::List(args) => list(reins, args, json).await,
    }
}

async fn verify(reins: &Reins, json: bool) -> reins_core::api::Result<u8> {
    let v = reins.audit_verify().await?;
    let code = if v.intact {
        exit::DONE
    } else {
        exit::RUN_FAILED
    };
    if json {
        print_json(&v);
        return Ok(code);
    }
    match &v.damage {
        None => println!(
            "intact: {} events, head seq {} ({}…), anchor {} ({} ms)",
            v.events,
            v.head.as_ref().map_or(0, |h| h.seq),
            v.head.as_ref().map_or("-", |h| &h.hash[..12]),
            v.anchor.status,
            v.elapsed_ms
        ),
        Some(d) => {
            println!(
                "DAMAGED: {}{}",
                d.kind.as_str(),
                d.seq.map(|s| format!(" at seq {s}")).unwrap_or_default()
            );
            println!("  {}", d.detail);
            println!(
                "  {} events chain correctly before it; anchor {} ({})",
                v.events, v.anchor.status, v.anchor.path
            );
            println!("  the log was not written to; export what is left with `reins audit export` to keep the evidence");
        }
    }
    if let Some(seq) = v.anchor_created_at.last() {
        println!("  note: the head anchor was (re)created at seq {seq}; before that, truncation could not be detected");
    }
    println!("  {}", keys_line(&v.keys));
    Ok(code)
}

/// What the MACs say, in one line.
fn keys_line(k: &reins_core::api::KeysView) -> String {
    let mut line = match k.status {
        "checked" => format!(
            "keys: {} vouched for by this machine's audit key ({}), keyed from seq {}",
            k.vouched,
            k.key_id.as_deref().unwrap_or("-"),
            k.keyed_since.unwrap_or(0)
        ),
        "unkeyed" => "keys: no event carries a MAC (written where no OS keyring could be reached): an event appended by hand cannot be told apart".to_owned(),
        _ => format!(
            "keys: MACs not checked: {}",
            k.detail.as_deref().unwrap_or("the keyring could not be read")
        ),
    };
    if k.status == "checked" && k.unkeyed > 0 {
        line.push_str(&format!("; {} without a MAC", k.unkeyed));
    }
    for other in &k.others {
        line.push_str(&format!(
            "; {} under key {} (another machine's: verify there)",
            other.events, other.id
        ));
    }
    line
}

async fn accept_unvouched(reins: &Reins, json: bool) -> reins_core::api::Result<u8> {
    let accepted = reins.audit_accept_unvouched(&super::review::who()).await?;
    if json {
        print_json(&serde_json::json!({
            "accepted": accepted.map(|(first, events)| serde_json::json!({"firstSeq": first, "events": events}))
        }));
    } else {
        match accepted {
            Some((first, events)) => println!(
                "accepted: {events} event(s) from seq {first} on that no key of this machine vouched for"
            ),
            None => println!("nothing to accept: every event of the keyed log is vouched for"),
        }
    }
    Ok(exit::DONE)
}

async fn acknowledge_anchor(reins: &Reins, json: bool) -> reins_core::api::Result<u8> {
    let seq = reins
        .audit_acknowledge_anchor(&super::review::who())
        .await?;
    if json {
        print_json(&serde_json::json!({ "acknowledged": seq }));
    } else {
        match seq {
            Some(seq) => println!("accepted: the head anchor made again at seq {seq}; events before it were not vouched for by any anchor"),
            None => println!("nothing to accept: the head anchor was never made again"),
        }
    }
    Ok(exit::DONE)
}

async fn filter_of(reins: &Reins, args: FilterArgs) -> reins_core::api::Result<Filter> {
    let now = reins_core::api::now_ms();
    let run = match &args.run {
        Some(r) => Some(reins.resolve_run(r).await?),
        None => None,
    };
    let filter = Filter {
        run,
        kind: args.kind,
        actor: args.actor,
        since: args
            .since
            .as_deref()
            .map(|t| parse_time(t, now, "--since"))
            .transpose()?,
        until: args
            .until
            .as_deref()
            .map(|t| parse_time(t, now, "--until"))
            .transpose()?,
    };
    filter.validate().map_err(Error::Invalid)?;
    Ok(filter)
}

/// RFC 3339, a UTC date, or an age before `now` (`45s`, `90m`, `2h`, `7d`, `2w`).
fn parse_time(text: &str, now: i64, flag: &str) -> reins_core::api::Result<i64> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t.as_millisecond());
    }
    if let Ok(d) = text.parse::<jiff::civil::Date>() {
        if let Ok(t) = d.to_zoned_datetime(jiff::tz::TimeZone::UTC) {
            return Ok(t.timestamp().as_millisecond());
        }
    }
    let unit_at = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (n, unit) = text.split_at(unit_at);
    let ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => 0,
    };
    match n.parse::<i64>() {
        Ok(n) if ms > 0 => Ok(now - n.saturating_mul(ms)),
        _ => Err(Error::Invalid(format!(
            "{flag} {text:?}: give an RFC 3339 time (2026-11-29T10:00:00Z), a UTC date (2026-11-29) or an age (90m, 2h, 7d)"
        ))),
    }
}

async fn export(reins: &Reins, args: ExportArgs, json: bool) -> reins_core::api::Result<u8> {
    let filter = filter_of(reins, args.filter).await?;
    let req = ExportRequest {
        format: match args.format {
            FormatArg::Jsonl => ExportFormat::Jsonl,
            FormatArg::Csv => ExportFormat::Csv,
        },
        out: args.out,
        filter,
        overwrite: args.force,
    };
    let tty = std::io::stderr().is_terminal();
    let mut last_shown = std::time::Instant::now();
    let mut progress = |done: u64, total: u64| {
        if tty && (last_shown.elapsed().as_millis() >= 100 || done == total) {
            last_shown = std::time::Instant::now();
            let pct = (done * 100).checked_div(total).unwrap_or(100);
            eprint!("\rexporting {done}/{total} events ({pct}%)");
            let _ = std::io::stderr().flush();
        }
    };
    let summary = reins.audit_export(&req, &mut progress).await;
    if tty {
        eprintln!();
    }
    let summary = summary?;
    if json {
        print_json(&summary);
        return Ok(exit::DONE);
    }
    println!(
        "wrote {} events (seq {}–{}) to {} ({} bytes, sha256 {})",
        summary.count,
        summary.first_seq.map_or("-".into(), |s| s.to_string()),
        summary.last_seq.map_or("-".into(), |s| s.to_string()),
        summary.path,
        summary.bytes,
        summary.sha256
    );
    if summary.redacted_on_export > 0 {
        println!(
            "  {} event(s) held text that looks secret and were redacted on the way out (marked \"redacted\")",
            summary.redacted_on_export
        );
    }
    if req.format == ExportFormat::Jsonl {
        println!(
            "  check it anywhere with: reins audit verify-export {}",
            summary.path
        );
    }
    Ok(exit::DONE)
}

pub fn verify_export(args: &VerifyExportArgs, json: bool) -> reins_core::api::Result<u8> {
    let check = Reins::audit_verify_export(&args.file)?;
    let code = if check.ok {
        exit::DONE
    } else {
        exit::RUN_FAILED
    };
    if json {
        print_json(&check);
        return Ok(code);
    }
    match (&check.problem, &check.manifest) {
        (None, Some(m)) => {
            println!(
                "ok: {} events (seq {}–{}), exported {} by Reins {}",
                check.events,
                m.first_seq.map_or("-".into(), |s| s.to_string()),
                m.last_seq.map_or("-".into(), |s| s.to_string()),
                m.exported_at,
                m.reins
            );
            if let Some(h) = &m.head {
                println!("  the log's head then: seq {} {}", h.seq, h.hash);
            }
            if !m.filter.is_empty() {
                println!(
                    "  filter: {}",
                    serde_json::to_string(&m.filter).unwrap_or_default()
                );
            }
            if check.redacted > 0 {
                println!(
                    "  {} redacted event(s): their place in the chain is checked, their content cannot be",
                    check.redacted
                );
            }
        }
        (Some(p), _) => {
            println!(
                "FAILED at line {}{}: {}",
                p.line,
                p.seq.map(|s| format!(" (seq {s})")).unwrap_or_default(),
                p.detail
            );
        }
        (None, None) => println!("FAILED: no manifest"),
    }
    Ok(code)
}

async fn list(reins: &Reins, args: ListArgs, json: bool) -> reins_core::api::Result<u8> {
    let filter = filter_of(reins, args.filter).await?;
    let page = reins
        .audit_page(&PageRequest {
            filter,
            before: args.before,
            oldest_first: false,
            limit: Some(args.limit),
        })
        .await?;
    if json {
        print_json(&page);
        return Ok(exit::DONE);
    }
    if page.events.is_empty() {
        println!("no events");
        return Ok(exit::DONE);
    }
    let rows: Vec<Vec<String>> = page
        .events
        .iter()
        .map(|e| {
            let run = match (&e.run_name, &e.run_id) {
                (Some(name), _) => cut(name, 24),
                (None, Some(id)) => id.chars().take(13).collect(),
                (None, None) => String::new(),
            };
            vec![
                e.seq.to_string(),
                time(e.at),
                run,
                e.kind.clone(),
                cut(&e.sentence, 140),
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["SEQ", "TIME", "RUN", "KIND", "WHAT HAPPENED"], &rows)
    );
    if let Some(next) = page.next {
        println!("more: reins audit list --before {next} (with the same filters)");
    }
    Ok(exit::DONE)
}

fn cut(text: &str, max: usize) -> String {
    let one: String = text.replace('\n', "⏎").chars().take(max).collect();
    if text.chars().count() > max {
        format!("{one}…")
    } else {
        one
    }
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn times_parse_in_three_forms() {
        let now = 1_000_000_000_000;
        assert_eq!(parse_time("2h", now, "--since").ok(), Some(now - 7_200_000));
        assert_eq!(
            parse_time("7d", now, "--since").ok(),
            Some(now - 604_800_000)
        );
        assert_eq!(
            parse_time("2026-11-29", now, "--since").ok(),
            Some(1_795_910_400_000)
        );
        assert_eq!(
            parse_time("2026-11-29T10:00:00Z", now, "--since").ok(),
            Some(1_795_946_400_000)
        );
        assert!(parse_time("yesterday", now, "--since").is_err());
        assert!(parse_time("5y", now, "--since").is_err());
    }
}
