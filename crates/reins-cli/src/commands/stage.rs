//! `reins stage [-C DIR] -- COMMAND…`: runs a command against a copy-on-write view of the
//! workspace, confined and without network, and prints what it did (each file created, changed or
//! deleted, with its diff) without applying any of it.

use std::path::PathBuf;
use std::time::Duration;

use reins_core::api::{Reins, StageRequest};

use crate::output::print_json;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  reins stage -- make\n  reins stage -C ~/src/app 'sed -i s/foo/bar/g src/*.rs'\n  reins stage --stat -- npm run codegen\n\nNothing the command does reaches the workspace: its writes land in a layer that is read and then thrown away. It has no network; what it tried and was refused is listed."
)]
pub struct Args {
    /// The workspace folder the view is made of (default: the current folder).
    #[arg(short = 'C', long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Stop the command after this long: 90s, 5m, 1h.
    #[arg(long, value_name = "TIME", default_value = "2m", value_parser = parse_time)]
    timeout: Duration,
    /// The most the command may write, in all: 500M, 2G. Past it, its writes fail.
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    cap: u64,
    /// Only the list of files, not their diffs.
    #[arg(long)]
    stat: bool,
    /// The command: a program and its arguments, or one command line (run by bash).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

pub async fn exec(reins: &Reins, args: Args, json: bool) -> reins_core::api::Result<u8> {
    let workspace = match args.workspace {
        Some(w) => w,
        None => std::env::current_dir().map_err(|e| reins_core::api::Error::Io {
            context: "the current folder".into(),
            source: e,
        })?,
    };
    if !json {
        eprintln!("staging `{}` …", args.command.join(" "));
    }
    let staged = reins
        .stage_command(StageRequest {
            workspace,
            argv: args.command,
            timeout: args.timeout,
            cap_bytes: args.cap,
        })
        .await?;
    if json {
        print_json(&staged);
        return Ok(crate::exit::DONE);
    }
    let ended = if staged.timed_out {
        "stopped at its time limit".to_owned()
    } else {
        match (staged.exit_code, staged.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "ended".into(),
        }
    };
    println!(
        "staged in {} ({}, set up in {:.1} ms): {ended} after {:.1} s",
        staged.workspace.display(),
        staged.mode,
        staged.setup_micros as f64 / 1000.0,
        staged.elapsed_ms as f64 / 1000.0
    );
    println!("{}", staged.summary);
    for c in &staged.changes {
        let mark = match c.kind {
            "created" => "A",
            "deleted" => "D",
            "mode" => "m",
            _ => "M",
        };
        println!("  {mark} {}  ({})", c.path, c.said);
    }
    for n in &staged.not_carried {
        println!("  not carried by applying the result: {n}");
    }
    for r in &staged.refused {
        println!("  refused: {r}");
    }
    if !staged.whole {
        println!("what it did is not all it would do: it was refused something or stopped early");
    }
    if !args.stat {
        for c in &staged.changes {
            print!("{}", c.diff);
        }
        println!("--- output");
        print!("{}", staged.report);
    }
    println!("nothing was applied: the workspace is as it was");
    Ok(crate::exit::DONE)
}

/// `90s`, `5m`, `1h`, or seconds alone.
fn parse_time(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (n, unit) = t.split_at(t.find(|c: char| c.is_alphabetic()).unwrap_or(t.len()));
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{text:?}: a time is like 90s, 5m or 1h"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("{text:?}: a time is like 90s, 5m or 1h")),
    };
    if secs == 0 {
        return Err("the time limit must be more than 0".into());
    }
    Ok(Duration::from_secs(secs))
}

/// `500M`, `2G`, `64K`, or bytes alone.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (n, unit) = t.split_at(t.find(|c: char| c.is_alphabetic()).unwrap_or(t.len()));
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{text:?}: a size is like 500M or 2G"))?;
    let scale: u64 = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => return Err(format!("{text:?}: a size is like 500M or 2G")),
    };
    let bytes = n
        .checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is too large"))?;
    if bytes < 4096 {
        return Err("the cap must be at least 4K".into());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_sizes_read_as_people_write_them() {
        assert_eq!(parse_time("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_time("5m"), Ok(Duration::from_secs(300)));
        assert!(parse_time("0").is_err());
        assert!(parse_time("5 parsecs").is_err());
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("500m"), Ok(500 << 20));
        assert!(parse_size("1").is_err());
        assert!(parse_size("99999999999G").is_err());
    }
}
