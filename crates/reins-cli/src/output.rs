//! Terminal output: times, tables, errors, and the live progress printer.

use std::io::Write as _;

use reins_core::api::{Error, ErrorCode};
use reins_core::api::{Observer, Progress};

use crate::exit;

/// Unix milliseconds as UTC, to the second.
pub fn time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%SZ").to_string())
        .unwrap_or_else(|_| ms.to_string())
}

pub fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(e) => eprintln!("error: cannot encode output: {e}"),
    }
}

/// Reports an error and returns the exit status for it.
pub fn fail(e: &Error, json: bool) -> u8 {
    if json {
        println!(
            "{}",
            serde_json::json!({ "error": { "code": e.code().as_str(), "message": e.to_string() } })
        );
    } else {
        eprintln!("error: {e}");
    }
    if e.is_user_error()
        || matches!(
            e.code(),
            ErrorCode::CorruptDatabase | ErrorCode::NewerSchema
        )
    {
        exit::USAGE
    } else {
        exit::RUN_FAILED
    }
}

/// Prints each progress event as it happens: a line of text, or a JSON line. A model's streamed
/// text is printed as it arrives, on its own indented lines.
pub struct Printer {
    json: bool,
    /// The model's text left the cursor mid-line.
    mid_line: std::sync::atomic::AtomicBool,
}

impl Printer {
    pub fn new(json: bool) -> Self {
        Self {
            json,
            mid_line: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Observer for Printer {
    fn on(&self, p: &Progress) {
        use std::sync::atomic::Ordering;
        let mut out = std::io::stdout().lock();
        if self.json {
            let _ = writeln!(out, "{}", serde_json::to_string(p).unwrap_or_default());
            return;
        }
        if let Progress::Text { text } = p {
            let start = !self.mid_line.swap(true, Ordering::Relaxed);
            // Text that ends its line leaves the next one to start indented, as a new one.
            let (body, ends) = match text.strip_suffix('\n') {
                Some(body) => (body, true),
                None => (text.as_str(), false),
            };
            let body = body.replace('\n', "\n    ");
            let _ = write!(out, "{}{body}", if start { "    " } else { "" });
            if ends {
                let _ = writeln!(out);
                self.mid_line.store(false, Ordering::Relaxed);
            }
            let _ = out.flush();
            return;
        }
        if self.mid_line.swap(false, Ordering::Relaxed) {
            let _ = writeln!(out);
        }
        let _ = match p {
            Progress::Text { .. } => Ok(()),
            Progress::Thinking {
                seq,
                model,
                tokens,
                budget,
            } => writeln!(
                out,
                "  … #{seq} asking {model} ({tokens} of {budget} context tokens)"
            ),
            Progress::Created {
                run,
                name,
                workspace,
            } => writeln!(out, "run {run}  {name:?}\n  workspace {workspace}"),
            Progress::Attempt {
                attempt,
                fence,
                adopted,
                resumed_from,
                ..
            } => {
                let how = match (adopted, resumed_from) {
                    (true, Some(seq)) => {
                        format!(", took over an abandoned run, resuming from checkpoint {seq}")
                    }
                    (false, Some(seq)) => format!(", resuming from checkpoint {seq}"),
                    (true, None) => ", took over an abandoned run, starting over".into(),
                    (false, None) => String::new(),
                };
                writeln!(out, "  attempt {attempt} (fence {fence}{how})")
            }
            Progress::Damage { seq, kind } => {
                writeln!(
                    out,
                    "  ! checkpoint {seq} is damaged ({}); recovering from the one before",
                    kind.as_str()
                )
            }
            Progress::Recovered {
                after_review: Some(step),
                ..
            } => writeln!(out, "  carrying out the review decision for step {step}"),
            Progress::Recovered {
                after_answer: Some(step),
                ..
            } => writeln!(out, "  handing your answer to step {step} to the agent"),
            Progress::Recovered { text, .. } => writeln!(out, "  recovery: {text}"),
            Progress::Settled { step, tool, how } => writeln!(out, "  ~ step {step} {tool}: {how}"),
            Progress::Step {
                seq,
                tool,
                status,
                why,
                summary,
                checkpoint,
                reused,
            } => {
                let mark = match status.as_str() {
                    "done" | "answered" => "✓",
                    "awaiting_review" => "?",
                    _ => "✗",
                };
                let reused = if *reused {
                    " (reused from the journal)"
                } else {
                    ""
                };
                let why = why
                    .as_ref()
                    .map(|w| format!("\n       why: {}", w.replace('\n', "\n            ")))
                    .unwrap_or_default();
                writeln!(out, "  {mark} #{seq} {tool:<9} {status:<8} {summary}  [checkpoint {checkpoint}]{reused}{why}")
            }
            Progress::Waiting { state, reason } => writeln!(out, "  … {state}: {reason}"),
            Progress::Finished { state, summary } => writeln!(out, "{state}: {summary}"),
        };
    }
}

/// Pads columns to their widest cell.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

/// The log's writer: each event is scanned for secrets (the harness's secret scanner) before it reaches
/// stderr, so an error quoting a key or a token never puts it in a log file a person keeps.
pub struct RedactedStderr;

pub struct RedactedLine(Vec<u8>);

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RedactedStderr {
    type Writer = RedactedLine;

    fn make_writer(&'a self) -> RedactedLine {
        RedactedLine(Vec::with_capacity(256))
    }
}

impl std::io::Write for RedactedLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactedLine {
    fn drop(&mut self) {
        use std::io::Write as _;
        let text = String::from_utf8_lossy(&self.0);
        let _ = std::io::stderr().write_all(reins_core::api::redact(&text).as_bytes());
    }
}
