//! The read-only tools. Their output is what the agent sees.

use std::fmt::Write as _;

use crate::action::{Action, ToolError, LIST_LIMIT, READ_LIMIT, SEARCH_LIMIT};
use crate::policy::Protected;
use crate::workspace::{JailError, RelPath, Workspace};

/// What the read-only tools may hand the agent. Each file is checked by the real path of the
/// handle it was opened with: a read judged below high never returns a protected file (a link
/// flipped after the check cannot redirect it), and a search never reads one.
#[derive(Clone, Copy, Debug)]
pub struct ReadGuard<'a> {
    pub protected: &'a Protected,
    /// The read was judged high risk, so protected paths were part of what was decided on.
    pub judged_high: bool,
}

impl ReadGuard<'_> {
    /// Why the file really opened (`real`) may not be returned, if it may not.
    fn refuses(&self, ws: &Workspace, real: &RelPath) -> Option<String> {
        if self.judged_high {
            return None;
        }
        self.protected.why_resolved(ws.root(), real.as_str())
    }
}

/// Runs a pure action; `Ok` is the text for the agent.
pub fn run_pure(action: &Action, ws: &Workspace, guard: ReadGuard<'_>) -> Result<String, ToolError> {
    match action {
        Action::Read { path } => {
            let bytes = ws.read(path, READ_LIMIT, &|real| guard.refuses(ws, real))?;
            match String::from_utf8(bytes) {
                Ok(text) => Ok(text),
                Err(e) => Err(ToolError::Failed {
                    tool: "fs.read",
                    detail: format!(
                        "{path} is binary ({} bytes); fs.read returns text only",
                        e.as_bytes().len()
                    ),
                }),
            }
        }
        Action::List { path, recursive } => {
            let (entries, cut) = ws.list(path, *recursive, LIST_LIMIT)?;
            let mut out = String::new();
            for e in &entries {
                match e.kind {
                    "directory" => writeln!(out, "{}/", e.path),
                    "file" => writeln!(out, "{}  ({} bytes)", e.path, e.size),
                    other => writeln!(out, "{}  ({other})", e.path),
                }
                .ok();
            }
            if entries.is_empty() {
                out.push_str("(empty directory)\n");
            }
            if cut {
                writeln!(out, "… listing cut at {LIST_LIMIT} entries").ok();
            }
            Ok(out)
        }
        Action::Search { pattern, path } => search(ws, pattern, path, guard),
        // The answer is the effect: the agent hears that it may go ahead.
        Action::Permission(_) => Ok("allowed".into()),
        _ => Err(ToolError::Failed {
            tool: "fs.read",
            detail: "not a read-only action".into(),
        }),
    }
}

/// One line for people: what a read-only step found (the agent gets the full output).
pub fn describe(action: &Action, output: &str) -> String {
    match action {
        Action::Read { path } => format!(
            "read {path} ({} lines, {} bytes)",
            output.lines().count(),
            output.len()
        ),
        Action::List { path, .. } => format!(
            "listed {path} ({} entries)",
            output
                .lines()
                .filter(|l| !l.starts_with('(') && !l.starts_with('…'))
                .count()
        ),
        Action::Search { pattern, path } => {
            let hits = output
                .lines()
                .filter(|l| {
                    !l.starts_with('(') && !l.starts_with('…') && !l.starts_with("no matches")
                })
                .count();
            format!(
                "searched {path} for /{pattern}/: {hits} matching line{}",
                if hits == 1 { "" } else { "s" }
            )
        }
        Action::Permission(p) => format!("allowed: {}", p.describe()),
        other => other.tool().to_owned(),
    }
}

fn search(
    ws: &Workspace,
    pattern: &str,
    path: &RelPath,
    guard: ReadGuard<'_>,
) -> Result<String, ToolError> {
    // A search is never reviewed for the files it opens: it reads no protected one.
    let guard = ReadGuard {
        judged_high: false,
        ..guard
    };
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| ToolError::Args {
            tool: "fs.search".into(),
            detail: e.to_string(),
        })?;
    let (entries, cut) = ws.list(path, true, 20_000)?;
    let mut out = String::new();
    let mut hits = 0;
    let mut skipped = 0;
    let mut protected = 0;
    'files: for e in entries.iter().filter(|e| e.kind == "file") {
        // A search must not read what a reviewed fs.read would (secrets in .env, git config…).
        if guard.protected.why(ws.root(), e.path.as_str()).is_some() {
            protected += 1;
            continue;
        }
        let bytes = match ws.read(&e.path, READ_LIMIT, &|real| guard.refuses(ws, real)) {
            Ok(b) => b,
            Err(JailError::Guarded { .. }) => {
                protected += 1;
                continue;
            }
            Err(
                JailError::TooLarge { .. }
                | JailError::HardLinked { .. }
                | JailError::NotRegular { .. },
            ) => {
                skipped += 1;
                continue;
            }
            Err(other) => return Err(other.into()),
        };
        if bytes.iter().take(8192).any(|b| *b == 0) {
            continue; // binary
        }
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            if re.is_match(line) {
                hits += 1;
                if hits > SEARCH_LIMIT {
                    writeln!(out, "… more matches; results cut at {SEARCH_LIMIT}").ok();
                    break 'files;
                }
                let line: String = line.chars().take(300).collect();
                writeln!(out, "{}:{}: {}", e.path, n + 1, line).ok();
            }
        }
    }
    if hits == 0 {
        writeln!(out, "no matches for /{pattern}/ under {path}").ok();
    }
    if skipped > 0 {
        writeln!(
            out,
            "({skipped} files skipped: too large, hard-linked or not regular)"
        )
        .ok();
    }
    if protected > 0 {
        writeln!(
            out,
            "({protected} protected files not searched: .git, .env and tool config; fs.read them, which is reviewed)"
        )
        .ok();
    }
    if cut {
        writeln!(out, "(only the first 20000 entries were searched)").ok();
    }
    Ok(out)
}
