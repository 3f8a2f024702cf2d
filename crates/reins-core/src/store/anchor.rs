//! The audit head anchor: the chain's latest (seq, hash), plus the hash at seq 1 and at every
//! `MARK_EVERY`th seq, kept in a small file beside the database. An edit in the middle of the chain
//! breaks the chain itself; the anchor is what catches a chain cut short, or replaced whole by one
//! that is consistent on its own.
//!
//! Moved after every commit that appended events (`Tx::commit` hands the new head to a writer
//! thread, so a step never waits for it; heads that arrive while a write is under way are merged
//! into the next; at most one write per 50 ms), atomically (temp file, fsync, rename), under a file lock so processes sharing the
//! data dir merge rather than overwrite: the head only moves forward and marks are only added. It
//! can lag the database (a crash before the writer caught up, a write that failed); it can never
//! run ahead of it. `flush` waits for the writer, so a verification sees every committed head.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use serde::{Deserialize, Serialize};

pub use crate::event::{Mark, MARK_EVERY};

/// How long a process waits for another to finish its anchor write before leaving the anchor as
/// it is.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The least time between two anchor writes.
const WRITE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

const FORMAT: &str = "reins-audit-anchor/1";

/// What the anchor file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Head {
    pub format: String,
    pub head: Mark,
    /// In seq order.
    pub marks: Vec<Mark>,
    pub updated_at: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum AnchorError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a Reins audit anchor ({detail}); it was left as it is. If you replaced the database on purpose, move this file aside")]
    Unreadable { path: PathBuf, detail: String },
}

#[derive(Debug)]
pub struct Anchor {
    path: PathBuf,
    queue: Arc<Queue>,
    /// How long to wait for another process's anchor write (`LOCK_WAIT`; shorter in tests).
    lock_wait: std::time::Duration,
    /// Marks of commits that are not durable yet (they ride with the next durable commit,
    /// `Store::begin_riding`): handed over only once one is, so the anchor never runs ahead.
    held: Mutex<Vec<Mark>>,
}

/// Heads waiting for the writer thread.
#[derive(Debug, Default)]
struct Queue {
    state: Mutex<Pending>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Pending {
    marks: Vec<Mark>,
    /// A write is under way (its marks already taken from `marks`).
    writing: bool,
    writer_started: bool,
    /// Someone waits in `flush`: write now.
    urgent: bool,
    closed: bool,
}

impl Anchor {
    /// The anchor of the database at `db`: `<db>.audit-head`.
    pub fn for_database(db: &Path) -> Self {
        let mut name = db.as_os_str().to_owned();
        name.push(".audit-head");
        Self::at(&PathBuf::from(name))
    }

    /// An anchor kept in the file `path` (a shared database's, in this machine's data dir).
    pub fn at(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            queue: Arc::default(),
            lock_wait: LOCK_WAIT,
            held: Mutex::default(),
        }
    }

    /// Keeps the marks of a commit that is not durable yet, until a durable one follows it.
    pub(super) fn hold(&self, marks: Vec<Mark>) {
        if let Ok(mut held) = self.held.lock() {
            held.extend(marks);
        }
    }

    /// The marks held so far: taken by a durable commit before it commits (every commit they
    /// belong to is then before it in the log, and made durable with it).
    pub(super) fn release(&self) -> Vec<Mark> {
        self.held
            .lock()
            .map(|mut held| std::mem::take(&mut *held))
            .unwrap_or_default()
    }

    /// Hands committed marks to the writer thread (started on first use).
    pub fn submit(&self, marks: Vec<Mark>) {
        let Ok(mut pending) = self.queue.state.lock() else {
            return;
        };
        pending.marks.extend(marks);
        if !pending.writer_started {
            pending.writer_started = true;
            let queue = Arc::clone(&self.queue);
            let anchor = Anchor {
                path: self.path.clone(),
                queue: Arc::default(),
                lock_wait: self.lock_wait,
                held: Mutex::default(),
            };
            let spawned = std::thread::Builder::new()
                .name("reins-audit-anchor".into())
                .spawn(move || anchor.write_loop(&queue));
            if let Err(e) = spawned {
                pending.writer_started = false;
                tracing::warn!(error = %e, "could not start the audit anchor writer; writing in place");
                let marks = std::mem::take(&mut pending.marks);
                drop(pending);
                self.advance_logged(&marks);
                return;
            }
        }
        self.queue.changed.notify_all();
    }

    /// Waits until every submitted head is on disk (or its write failed and was logged).
    pub fn flush(&self) {
        let Ok(mut pending) = self.queue.state.lock() else {
            return;
        };
        while pending.writer_started && (pending.writing || !pending.marks.is_empty()) {
            pending.urgent = true;
            self.queue.changed.notify_all();
            pending = match self.queue.changed.wait(pending) {
                Ok(p) => p,
                Err(_) => return,
            };
        }
    }

    fn write_loop(&self, queue: &Queue) {
        let Ok(mut pending) = queue.state.lock() else {
            return;
        };
        loop {
            if !pending.marks.is_empty() {
                let marks = std::mem::take(&mut pending.marks);
                pending.writing = true;
                drop(pending);
                self.advance_logged(&marks);
                let written = std::time::Instant::now();
                pending = match queue.state.lock() {
                    Ok(p) => p,
                    Err(_) => return,
                };
                pending.writing = false;
                queue.changed.notify_all();
                // Heads arriving within the interval are gathered into one write: an fsync per
                // commit would compete with the commits themselves for the disk.
                while !pending.urgent && !pending.closed {
                    let Some(left) = WRITE_INTERVAL.checked_sub(written.elapsed()) else {
                        break;
                    };
                    pending = match queue.changed.wait_timeout(pending, left) {
                        Ok((p, _)) => p,
                        Err(_) => return,
                    };
                }
                pending.urgent = false;
                continue;
            }
            if pending.closed {
                return;
            }
            pending = match queue.changed.wait(pending) {
                Ok(p) => p,
                Err(_) => return,
            };
        }
    }

    fn advance_logged(&self, marks: &[Mark]) {
        if let Err(e) = self.advance(marks) {
            tracing::warn!(error = %e, "could not move the audit head anchor");
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The anchor as it is on disk; `None` when there is none yet.
    pub fn read(&self) -> Result<Option<Head>, AnchorError> {
        let mut text = String::new();
        match File::open(&self.path) {
            Ok(mut f) => f.read_to_string(&mut text).map_err(|e| self.io(e))?,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(e)),
        };
        let head: Head = serde_json::from_str(&text).map_err(|e| AnchorError::Unreadable {
            path: self.path.clone(),
            detail: e.to_string(),
        })?;
        if head.format != FORMAT {
            return Err(AnchorError::Unreadable {
                path: self.path.clone(),
                detail: format!("format {:?}", head.format),
            });
        }
        Ok(Some(head))
    }

    /// Merges `marks` (the last is the newest head) into the file.
    pub fn advance(&self, marks: &[Mark]) -> Result<(), AnchorError> {
        let Some(newest) = marks.iter().max_by_key(|m| m.seq) else {
            return Ok(());
        };
        let _lock = self.lock()?;
        // An unreadable anchor is evidence; it is never overwritten.
        let mut head = self.read()?.unwrap_or_else(|| Head {
            format: FORMAT.into(),
            head: newest.clone(),
            marks: Vec::new(),
            updated_at: 0,
        });
        if newest.seq > head.head.seq {
            head.head = newest.clone();
        }
        for m in marks.iter().filter(|m| Mark::wanted(m.seq)) {
            // A mark already held is kept as it was: if the chain was replaced, the anchor says so.
            if let Err(at) = head.marks.binary_search_by_key(&m.seq, |k| k.seq) {
                head.marks.insert(at, m.clone());
            }
        }
        head.updated_at = crate::clock::now_ms();
        self.write(&head)
    }

    fn write(&self, head: &Head) -> Result<(), AnchorError> {
        let bytes = serde_json::to_vec_pretty(head).map_err(|e| self.io(e.into()))?;
        let mut tmp = self.path.as_os_str().to_owned();
        tmp.push(format!(".tmp-{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let written = (|| {
            let mut f = File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.write_all(b"\n")?;
            f.sync_data()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map_err(|e| self.io(e))
    }

    fn lock(&self) -> Result<File, AnchorError> {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(PathBuf::from(name))
            .map_err(|e| self.io(e))?;
        // Bounded: a process frozen (SIGSTOP) while it held the lock must not stop every other
        // process sharing the data dir. Giving up only leaves the anchor behind the database,
        // which verification tolerates.
        let deadline = std::time::Instant::now() + self.lock_wait;
        loop {
            match f.try_lock() {
                Ok(()) => return Ok(f),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(self.io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "another process has held the anchor's lock for {} s; the anchor is left as it is",
                            self.lock_wait.as_secs_f32()
                        ),
                    )))
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(self.io(e)),
            }
        }
    }

    fn io(&self, source: std::io::Error) -> AnchorError {
        AnchorError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

impl Drop for Anchor {
    /// The last store handle going away lets the writer finish what it holds, then stop.
    fn drop(&mut self) {
        self.flush();
        if let Ok(mut pending) = self.queue.state.lock() {
            pending.closed = true;
        }
        self.queue.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(seq: i64) -> Mark {
        Mark {
            seq,
            hash: format!("h{seq}"),
        }
    }

    /// A process frozen while it held the lock (SIGSTOP) must not hang the others for good:
    /// they give up after the wait and leave the anchor as it was.
    #[test]
    fn a_lock_held_elsewhere_is_waited_out_then_given_up() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let mut anchor = Anchor::at(&dir.path().join("head"));
        anchor.lock_wait = std::time::Duration::from_millis(300);
        anchor.advance(&[mark(1)])?;

        // Another open file description holds the lock, as another process would.
        let held = OpenOptions::new()
            .write(true)
            .open(dir.path().join("head.lock"))?;
        held.lock()?;
        let started = std::time::Instant::now();
        let err = anchor.advance(&[mark(2)]).err().ok_or("advanced under a held lock")?;
        assert!(started.elapsed() >= anchor.lock_wait);
        match err {
            AnchorError::Io { source, .. } => assert_eq!(source.kind(), ErrorKind::TimedOut),
            other => return Err(format!("unexpected error: {other}").into()),
        }
        assert_eq!(anchor.read()?.ok_or("no anchor")?.head, mark(1));

        // Once it is let go, the head moves again.
        held.unlock()?;
        anchor.advance(&[mark(2)])?;
        assert_eq!(anchor.read()?.ok_or("no anchor")?.head, mark(2));
        Ok(())
    }
}
