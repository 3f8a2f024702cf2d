//! What an external agent writes to stderr: a tail kept in memory (for the reason a run is
//! suspended with) and a bounded log on disk (for `reins show` and the run detail), both redacted
//! line by line — the values of the keys the agent was given first, then anything that looks like
//! a secret — so nothing secret reaches the disk.

use std::collections::VecDeque;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Bytes of the agent's stderr kept in memory (the tail).
pub const TAIL: usize = 64 * 1024;
/// Bytes a log file grows to before it is rotated: the log holds at most twice this.
pub const LOG_ROTATE_AT: u64 = 512 * 1024;
/// A line longer than this is cut (and marked) before it is kept.
const MAX_LINE: usize = 8 * 1024;

/// The last bytes the agent wrote to stderr.
#[derive(Clone, Default)]
pub struct Tail(Arc<Mutex<VecDeque<u8>>>);

impl Tail {
    fn push(&self, bytes: &[u8]) {
        if let Ok(mut t) = self.0.lock() {
            t.extend(bytes);
            let over = t.len().saturating_sub(TAIL);
            t.drain(..over);
        }
    }

    /// The tail as text, at most `max` bytes of it (from the end).
    pub fn text(&self, max: usize) -> String {
        let bytes: Vec<u8> = match self.0.lock() {
            Ok(t) => t.iter().copied().collect(),
            Err(_) => Vec::new(),
        };
        let from = bytes.len().saturating_sub(max);
        String::from_utf8_lossy(&bytes[from..]).into_owned()
    }
}

/// Turns the agent's stderr bytes into redacted lines for the tail and the log.
pub struct Sink {
    tail: Tail,
    log: Option<PathBuf>,
    secrets: Vec<String>,
    pending: Vec<u8>,
}

impl Sink {
    /// `secrets`: the values handed to the agent (its keys), replaced wherever they appear.
    pub fn new(tail: Tail, log: Option<PathBuf>, secrets: Vec<String>) -> Self {
        if let Some(dir) = log.as_deref().and_then(Path::parent) {
            if let Err(e) = std::fs::create_dir_all(dir) {
                tracing::warn!("cannot make the agent log folder {}: {e}", dir.display());
            }
        }
        Self {
            tail,
            log,
            secrets: secrets.into_iter().filter(|s| s.len() >= 4).collect(),
            pending: Vec::new(),
        }
    }

    /// A line of Reins' own in the log (`reins: …`), such as when the process started.
    pub fn note(&mut self, text: &str) {
        self.keep(format!("reins: {text}\n").as_bytes());
    }

    /// Takes bytes as they arrive; whole lines are kept, the rest waits for its end.
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.keep(&line);
        }
        if self.pending.len() > MAX_LINE {
            let mut line: Vec<u8> = std::mem::take(&mut self.pending);
            line.truncate(MAX_LINE);
            line.extend_from_slice(" […cut]\n".as_bytes());
            self.keep(&line);
        }
    }

    /// Keeps what is left (the stream ended without a newline).
    pub fn flush(&mut self) {
        if !self.pending.is_empty() {
            let mut line = std::mem::take(&mut self.pending);
            line.push(b'\n');
            self.keep(&line);
        }
    }

    fn keep(&mut self, line: &[u8]) {
        let mut text = plain(&String::from_utf8_lossy(line));
        for s in &self.secrets {
            if text.contains(s.as_str()) {
                text = text.replace(s.as_str(), "[redacted]");
            }
        }
        let text = crate::secrets::redact(&text).into_owned();
        self.tail.push(text.as_bytes());
        if let Some(path) = &self.log {
            if let Err(e) = append(path, text.as_bytes()) {
                tracing::warn!("cannot write the agent log {}: {e}", path.display());
                self.log = None;
            }
        }
    }
}

/// The text without terminal escapes (colours, cursor moves) and other control characters but
/// tab and newline: what a person reads in `reins show` and the app, and what the log keeps.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI (`ESC [ … final`), OSC (`ESC ] … BEL or ESC \`), or a two-byte escape.
                match chars.next() {
                    Some('[') => {
                        for c in chars.by_ref() {
                            if ('@'..='~').contains(&c) {
                                break;
                            }
                        }
                    }
                    Some(']') => {
                        while let Some(c) = chars.next() {
                            if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                                break;
                            }
                        }
                    }
                    _ => {}
                }
            }
            '\t' | '\n' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size >= LOG_ROTATE_AT {
        std::fs::rename(path, rotated(path))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(bytes)
}

/// The last `max` bytes of a run's agent log (the rotated part first), or None when it has none.
pub fn read_tail(path: &Path, max: usize) -> std::io::Result<Option<String>> {
    let mut bytes = match std::fs::read(rotated(path)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    match std::fs::read(path) {
        Ok(b) => bytes.extend(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && bytes.is_empty() => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let from = bytes.len().saturating_sub(max);
    Ok(Some(String::from_utf8_lossy(&bytes[from..]).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_redacted_before_they_reach_the_tail_or_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs/run.log");
        let tail = Tail::default();
        let mut sink = Sink::new(tail.clone(), Some(log.clone()), vec!["hunter2-key".into()]);
        sink.push(b"starting with key hunter2-");
        sink.push(b"key and token sk-abcdefghijklmnopqrstuvwxyz012345\nno newline");
        sink.flush();
        let on_disk = std::fs::read_to_string(&log).unwrap();
        for text in [on_disk.as_str(), tail.text(10_000).as_str()] {
            assert!(!text.contains("hunter2-key"), "{text}");
            assert!(!text.contains("sk-abcdefghijklmnopqrstuvwxyz012345"), "{text}");
            assert!(text.contains("starting with key [redacted]"), "{text}");
            assert!(text.ends_with("no newline\n"), "{text}");
        }
    }

    #[test]
    fn the_log_is_bounded_and_its_tail_reads_across_the_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("run.log");
        let mut sink = Sink::new(Tail::default(), Some(log.clone()), Vec::new());
        let line = format!("{}\n", "x".repeat(1023));
        for n in 0..3000 {
            sink.push(format!("{n:05} {line}").as_bytes());
        }
        let total = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0)
            + std::fs::metadata(rotated(&log)).map(|m| m.len()).unwrap_or(0);
        assert!(total <= 2 * LOG_ROTATE_AT + 2048, "{total} bytes kept");
        let tail = read_tail(&log, 4096)
            .unwrap()
            .unwrap_or_default();
        assert!(tail.trim_end().lines().last().is_some_and(|l| l.starts_with("02999 ")));
        assert_eq!(read_tail(&dir.path().join("none.log"), 10).ok(), Some(None));
    }

    #[test]
    fn terminal_escapes_and_control_characters_are_dropped() {
        let tail = Tail::default();
        let mut sink = Sink::new(tail.clone(), None, Vec::new());
        sink.push(b"\x1b[2m2026-12-02\x1b[0m \x1b[31mERROR\x1b[0m codex\r\n");
        sink.push(b"\x1b]0;a title\x07after\ttab\x08\n");
        assert_eq!(tail.text(1000), "2026-12-02 ERROR codex\nafter\ttab\n");
    }

    #[test]
    fn an_endless_line_is_cut() {
        let tail = Tail::default();
        let mut sink = Sink::new(tail.clone(), None, Vec::new());
        sink.push(&vec![b'y'; MAX_LINE * 3]);
        let text = tail.text(TAIL);
        assert!(text.contains("[…cut]"));
        assert!(text.len() < MAX_LINE * 2);
    }
}
