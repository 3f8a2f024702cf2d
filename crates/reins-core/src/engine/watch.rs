//! Watching an external agent Reins started. Between its moves (so at the end of its turn at the
//! latest) the workspace is fingerprinted again and every change is held against what the run
//! knows:
//! - a change the journal explains is the run's own: a write Reins made, or one handed to the
//!   agent, whose content is what the agent reported;
//! - a change made while a command that was allowed ran is that command's, and recorded as such;
//! - anything else the agent did without asking. The run stops there, with the changes in words
//!   and a checkpoint holding the files as they were: rolling back to it undoes them.
//!
//! So undo has what it needs, the content of every file is kept in the blob store (up to a size)
//! when the watch first sees it and whenever it changes.

use std::collections::HashSet;

use crate::action::Action;
use crate::agent::Move;
use crate::checkpoint::Level;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::event::{self as ev, Actor, WorkspaceChange};
use crate::policy::Risk;
use crate::step::StepStatus;
use crate::store::write::Write;
use crate::store::{audit, runs, steps};
use crate::workspace::fingerprint::{self, ChangeKind, Fingerprint};
use crate::workspace::refresh;
use crate::workspace::watcher::{Touched, Watcher};

use super::commit::Change;
use super::drive::Drive;
use super::recover::explained;

/// Largest file whose content is kept for an undo.
pub const KEEP_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Most bytes kept for an undo in one look (the first look keeps the whole workspace).
pub const KEEP_TOTAL_BYTES: u64 = 256 * 1024 * 1024;

pub(super) struct Watch {
    /// The workspace as last seen.
    seen: Fingerprint,
    /// Contents known to be in the blob store.
    kept: HashSet<Digest>,
    /// The first look's keeping of the whole workspace, going on beside the agent's start.
    keeping: Option<tokio::task::JoinHandle<Result<HashSet<Digest>>>>,
    /// The first step not yet asked whether it let a command run.
    checked: i64,
    /// The last step since the last look that let a command run.
    command: Option<i64>,
    /// The paths touched since the last look (None: the watch could not start).
    watcher: Option<Watcher>,
    /// Why the next look rescans the whole tree even though the watch holds.
    rescan: Option<String>,
    /// How looks find changes, as the run's record last says (`Compat::changes_found_by`).
    told: Option<String>,
}

/// How many watches are kept for runs waiting for a person here; the oldest goes first.
const PARKED: usize = 8;

/// Watches kept while their runs wait for a person in this process.
#[derive(Default)]
pub(crate) struct Parked(std::sync::Mutex<Vec<(crate::ids::RunId, Watcher)>>);

impl Parked {
    fn park(&self, run: crate::ids::RunId, watcher: Watcher) {
        if let Ok(mut kept) = self.0.lock() {
            kept.retain(|(r, _)| *r != run);
            kept.push((run, watcher));
            if kept.len() > PARKED {
                kept.remove(0);
            }
        }
    }

    fn take(&self, run: crate::ids::RunId) -> Option<Watcher> {
        let mut kept = self.0.lock().ok()?;
        let at = kept.iter().position(|(r, _)| *r == run)?;
        Some(kept.remove(at).1)
    }

    /// The run will not go on here without a new start: its watch ends.
    pub(crate) fn forget(&self, run: crate::ids::RunId) {
        drop(self.take(run));
    }
}

/// Why an attempt's first look rescans: the scan it starts from was taken before the watch.
const BEGAN: &str = "the watch began after the last scan";

/// What the record says of looks that watch.
const WATCHING: &str = "watching the workspace: after each turn only the paths touched are looked at";

/// The workspace as a look found it: the touched paths looked at again, or the whole tree.
pub(super) enum Looked {
    Refreshed(refresh::Refresh),
    Whole(Fingerprint),
}

impl Looked {
    fn land(self, seen: &mut Fingerprint) {
        match self {
            Looked::Refreshed(r) => {
                r.apply(seen);
            }
            Looked::Whole(now) => *seen = now,
        }
    }
}

/// What a look found.
pub(super) enum Seen {
    Nothing,
    /// The run must stop: this change (its `workspace.changed_unasked` event inside) and the
    /// reason the person is told.
    Unasked { change: Box<Change>, reason: String },
}

impl Drive<'_> {
    /// Starts watching for this attempt, when the agent is one Reins watches, from the fingerprint
    /// the attempt took already (`taken`), or a new one.
    pub(super) async fn start_watch(&mut self, taken: Option<Fingerprint>) -> Result<()> {
        if !self.agent.external().is_some_and(|x| x.watched()) {
            return Ok(());
        }
        let seen = match taken {
            Some(fp) => fp,
            None => {
                let previous = self.stored_fingerprint().await?.unwrap_or_default();
                self.rescan(previous).await?
            }
        };
        let all: Vec<String> = seen.entries.keys().cloned().collect();
        // Keeping a whole workspace takes a while (a file created per content): it goes on while
        // the agent starts, and the first look that needs it waits for it. A file the agent
        // changes before it was read is not kept (its content no longer has the scan's hash).
        // Watched from now on. A watch kept from the attempt before (the run waited for a person
        // here) has watched since before this attempt's scan; a new one began after it, so the
        // first look rescans.
        let (watcher, rescan) = match self.e.watches.take(self.run) {
            Some(w) => (Some(w), None),
            None => match Watcher::start(self.ws.root()) {
                Ok(w) => (Some(w), Some(BEGAN.to_owned())),
                Err(e) => (None, Some(format!("the workspace cannot be watched: {e}"))),
            },
        };
        let told = runs::get(self.e.store.pool(), self.run)
            .await?
            .compat
            .changes_found_by;
        let wanted = self.wanted(&seen, &all, &HashSet::new());
        let keeping = tokio::task::spawn_blocking(keeper(
            self.ws.root().to_path_buf(),
            self.e.blobs.clone(),
            wanted,
        ));
        self.watch = Some(Watch {
            seen,
            kept: HashSet::new(),
            keeping: Some(keeping),
            checked: self.cp.next_step,
            command: None,
            watcher,
            rescan,
            told,
        });
        Ok(())
    }

    /// Looks at the workspace again (see the module's notes) before the agent's `next` move (None:
    /// the run stops where it is). Only where a look can tell something: before a move that may
    /// run a command and after one did, and when the agent's turn or the run stops. Between two
    /// file writes nothing needs telling apart, and a look costs a walk of the workspace.
    pub(super) async fn look(&mut self, next: Option<&Move>) -> Result<Seen> {
        let Some(mut w) = self.watch.take() else {
            return Ok(Seen::Nothing);
        };
        if let Some(seq) = self.allowed_command(w.checked).await? {
            w.command = Some(seq);
        }
        w.checked = self.cp.next_step;
        let needed = match next {
            Some(Move::Call { call, .. }) => runs_a_command(call, &self.ws),
            Some(Move::Bound { .. }) => false,
            Some(_) | None => true,
        };
        if !needed && w.command.is_none() {
            self.watch = Some(w);
            return Ok(Seen::Nothing);
        }
        if let Some(keeping) = w.keeping.take() {
            w.kept.extend(joined(keeping.await)?);
        }
        let (all, now) = self.changes_since(&mut w).await?;
        let known = self.known_files().await?;
        let found: Vec<fingerprint::Change> = all
            .into_iter()
            .filter(|c| !explained(c, &known))
            .collect();
        let changed: Vec<String> = found.iter().map(|c| c.path.clone()).collect();
        let before: Vec<Option<Digest>> = found
            .iter()
            .map(|c| w.seen.entries.get(&c.path).and_then(|s| s.sha256.clone()))
            .collect();
        now.land(&mut w.seen);
        let wanted = self.wanted(&w.seen, &changed, &w.kept);
        let keeper = keeper(self.ws.root().to_path_buf(), self.e.blobs.clone(), wanted);
        w.kept.extend(joined(tokio::task::spawn_blocking(keeper).await)?);
        let command = w.command.take();
        let list: Vec<WorkspaceChange> = found
            .into_iter()
            .zip(before)
            .map(|(c, before)| {
                let undoable = match (&before, c.kind) {
                    (None, ChangeKind::Added) => true,
                    (Some(d), _) => w.kept.contains(d) && !self.e.blobs.missing(d),
                    (None, _) => false,
                };
                WorkspaceChange {
                    path: c.path,
                    kind: c.kind,
                    before,
                    after: c.sha256,
                    undoable,
                }
            })
            .collect();
        self.watch = Some(w);
        if list.is_empty() {
            return Ok(Seen::Nothing);
        }
        if let Some(step) = command {
            self.know(&list);
            let change = Change::default().event(audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::ChangedByCommand {
                    step,
                    changes: list,
                },
            ));
            self.commit(change).await?;
            return Ok(Seen::Nothing);
        }
        // A checkpoint with the files as they were: rolling back to it undoes the changes.
        let undoable: Vec<&WorkspaceChange> = list.iter().filter(|c| c.undoable).collect();
        let undo = if undoable.is_empty() {
            None
        } else {
            let now_known = self.cp.files.clone();
            for c in &undoable {
                self.cp.files.insert(c.path.clone(), c.before.clone());
            }
            let written = self
                .write_checkpoint(
                    Level::Snapshot,
                    "before the agent's unasked changes".into(),
                )
                .await;
            self.cp.files = now_known;
            Some(written?)
        };
        self.know(&list);
        let reason = unasked_reason(&list, undo, self.run);
        // The run stops with the files as they are now: that is where it resumes from.
        let now = self.checkpoint(Level::Step, "after the agent's unasked changes".into())?;
        let change = Change::default().checkpoint(now).event(audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::ChangedUnasked {
                changes: list,
                undo,
            },
        ));
        Ok(Seen::Unasked {
            change: Box::new(change),
            reason,
        })
    }

    /// Keeps this attempt's watch for the next, when the run waits for a person here (its agent
    /// kept alive with it).
    pub(super) fn park_watch(&mut self, state: crate::run::RunState) {
        use crate::run::RunState;
        if !matches!(state, RunState::AwaitingApproval | RunState::AwaitingInput) {
            return;
        }
        if let Some(watcher) = self.watch.take().and_then(|w| w.watcher) {
            self.e.watches.park(self.run, watcher);
        }
    }

    /// What changed since the last look: the paths the watch saw touched, looked at again, or a
    /// rescan of the whole tree where the watch cannot say (it overflowed, the ignore rules
    /// changed, it could not start). The run's record says which one the looks take.
    async fn changes_since(&mut self, w: &mut Watch) -> Result<(Vec<fingerprint::Change>, Looked)> {
        let touched = match (&mut w.watcher, w.rescan.take()) {
            (Some(x), None) => x.take(),
            (Some(x), Some(why)) => {
                x.take();
                Touched::Lost(why)
            }
            (None, why) => {
                w.rescan = why.clone();
                Touched::Lost(why.unwrap_or_default())
            }
        };
        let (out, how) = match touched {
            Touched::Paths(paths) => {
                let root = self.ws.root().to_path_buf();
                let seen = std::mem::take(&mut w.seen);
                let (seen, refreshed) = tokio::task::spawn_blocking(move || {
                    let r = refresh::refresh(&root, &seen, &paths);
                    (seen, r)
                })
                .await
                .map_err(|e| Error::Io {
                    context: "looking at the paths the watch saw".into(),
                    source: std::io::Error::other(e.to_string()),
                })?;
                w.seen = seen;
                let refreshed = refreshed.map_err(|source| Error::Io {
                    context: format!("looking at {}", self.ws.root().display()),
                    source,
                })?;
                (
                    (refreshed.changes.clone(), Looked::Refreshed(refreshed)),
                    Some(WATCHING.to_owned()),
                )
            }
            Touched::Lost(why) => {
                let now = self.rescan(w.seen.clone()).await?;
                // The first look of an attempt rescans by design: the next says how looks go.
                let how = (why != BEGAN).then(|| format!("a full rescan after each turn ({why})"));
                ((fingerprint::diff(&w.seen, &now), Looked::Whole(now)), how)
            }
        };
        let Some(how) = how else {
            return Ok(out);
        };
        if w.told.as_deref() != Some(how.as_str()) {
            let mut compat = runs::get(self.e.store.pool(), self.run).await?.compat;
            compat.changes_found_by = Some(how.clone());
            self.commit(Change::rows(vec![Write::RunCompat(Box::new(compat))]))
                .await?;
            w.told = Some(how);
        }
        Ok(out)
    }

    /// The run knows the files as they are now (so a later look or resume does not report them
    /// again).
    fn know(&mut self, list: &[WorkspaceChange]) {
        for c in list {
            self.cp.files.insert(c.path.clone(), c.after.clone());
        }
    }

    /// The last step from `from` on that let a command run which may change files: a command Reins
    /// ran, or one an agent was allowed to run itself, not rated low (a low command only reads).
    async fn allowed_command(&self, from: i64) -> Result<Option<i64>> {
        let mut found = None;
        for seq in from..self.cp.next_step {
            let Some(st) = steps::get(self.e.store.pool(), self.run, seq).await? else {
                continue;
            };
            let ran = matches!(st.status, StepStatus::Done | StepStatus::Failed);
            if ran
                && matches!(st.risk, Some(Risk::Medium | Risk::High))
                && runs_a_command(st.action.call(), &self.ws)
            {
                found = Some(seq);
            }
        }
        Ok(found)
    }

    /// The contents of `paths` as `fp` records them that are not kept yet, and small enough.
    fn wanted(&self, fp: &Fingerprint, paths: &[String], kept: &HashSet<Digest>) -> Vec<Wanted> {
        let mut budget = KEEP_TOTAL_BYTES;
        let mut out = Vec::new();
        for path in paths {
            let Some(stat) = fp.entries.get(path) else {
                continue;
            };
            let Some(digest) = &stat.sha256 else {
                continue;
            };
            if kept.contains(digest) && !self.e.blobs.missing(digest) {
                continue;
            }
            if stat.size > KEEP_FILE_BYTES || stat.size > budget {
                continue;
            }
            budget -= stat.size;
            out.push(Wanted {
                path: path.clone(),
                digest: digest.clone(),
            });
        }
        out
    }
}

/// One file whose content is to be kept, as a scan hashed it.
pub(super) struct Wanted {
    path: String,
    digest: Digest,
}

/// Keeps each wanted content in the blob store (read through the workspace's jail: never through
/// a link, never a special file), and makes them durable at once; the digests now kept. Blocking:
/// run it with `spawn_blocking`.
fn keeper(
    root: std::path::PathBuf,
    blobs: crate::blob::BlobStore,
    wanted: Vec<Wanted>,
) -> impl FnOnce() -> Result<HashSet<Digest>> {
    let handle = tokio::runtime::Handle::current();
    move || {
        let mut kept = HashSet::new();
        if wanted.is_empty() {
            return Ok(kept);
        }
        let ws = crate::workspace::Workspace::open(&root)?;
        let mut wrote = false;
        for w in wanted {
            if blobs.has(&w.digest) {
                kept.insert(w.digest);
                continue;
            }
            let Ok(rel) = ws.resolve(&w.path) else {
                continue;
            };
            let Ok(Some(bytes)) = ws.image(&rel) else {
                continue;
            };
            // Changed since the scan: not the content the fingerprint names.
            if Digest::of(&bytes) != w.digest {
                continue;
            }
            handle.block_on(blobs.put_relaxed(&bytes))?;
            kept.insert(w.digest);
            wrote = true;
        }
        if wrote {
            blobs.settle()?;
        }
        Ok(kept)
    }
}

/// A keeper's outcome, a failed join read as an I/O error.
fn joined(
    r: std::result::Result<Result<HashSet<Digest>>, tokio::task::JoinError>,
) -> Result<HashSet<Digest>> {
    r.map_err(|e| Error::Io {
        context: "keeping the workspace's content for undo".into(),
        source: std::io::Error::other(e.to_string()),
    })?
}

/// Whether a call runs a command, by Reins or by the agent once allowed (an MCP tool counts: it
/// does what its server does).
fn runs_a_command(call: &crate::action::ToolCall, ws: &crate::workspace::Workspace) -> bool {
    match Action::parse(call, ws) {
        Ok(Action::Shell(_) | Action::Mcp(_)) => true,
        Ok(Action::Permission(p)) => match p.implied.as_deref() {
            // Not understood: whatever it does is what was allowed.
            None => !p.recall,
            Some(Action::Shell(_) | Action::Mcp(_)) => true,
            // File changes handed over are in the journal; reads change nothing.
            Some(_) => false,
        },
        Ok(_) => false,
        // Not readable (now): nothing tells it runs no command.
        Err(_) => true,
    }
}

/// What the person is told when the run stops for changes nobody approved.
fn unasked_reason(list: &[WorkspaceChange], undo: Option<i64>, run: crate::ids::RunId) -> String {
    let mut s = format!(
        "the agent changed {} without asking Reins: {}. ",
        if list.len() == 1 { "a file".to_owned() } else { format!("{} files", list.len()) },
        WorkspaceChange::in_words(list)
    );
    match undo {
        Some(n) => s.push_str(&format!(
            "See the change with `reins rollback {run} --to {n} --dry-run`; undo it with `reins rollback {run} --to {n}`"
        )),
        None => s.push_str("Its earlier content was not kept (too large), so Reins cannot undo it"),
    }
    let lost: Vec<&str> = list
        .iter()
        .filter(|c| !c.undoable)
        .map(|c| c.path.as_str())
        .collect();
    if undo.is_some() && !lost.is_empty() {
        s.push_str(&format!(
            " (all but {}, whose earlier content was too large to keep)",
            lost.join(", ")
        ));
    }
    s.push_str(&format!("; `reins resume {run}` goes on with the files as they are"));
    s
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn change(path: &str, kind: ChangeKind, now: Option<&[u8]>) -> fingerprint::Change {
        fingerprint::Change {
            path: path.into(),
            kind,
            sha256: now.map(Digest::of),
        }
    }

    #[test]
    fn only_the_content_the_journal_left_is_the_runs_own() {
        let known: BTreeMap<String, Option<Digest>> = [
            ("a.txt".to_owned(), Some(Digest::of(b"reported"))),
            ("gone.txt".to_owned(), None),
        ]
        .into();
        assert!(explained(&change("a.txt", ChangeKind::Modified, Some(b"reported")), &known));
        // The agent wrote something other than what it reported and was allowed.
        assert!(!explained(&change("a.txt", ChangeKind::Modified, Some(b"other")), &known));
        assert!(!explained(&change("a.txt", ChangeKind::Removed, None), &known));
        assert!(explained(&change("gone.txt", ChangeKind::Removed, None), &known));
        assert!(!explained(&change("new.txt", ChangeKind::Added, Some(b"x")), &known));
    }

    #[test]
    fn the_reason_names_the_files_and_how_to_look_undo_or_keep() {
        let run = crate::ids::RunId::new();
        let list = vec![
            WorkspaceChange {
                path: "NOTES.md".into(),
                kind: ChangeKind::Modified,
                before: Some(Digest::of(b"a")),
                after: Some(Digest::of(b"b")),
                undoable: true,
            },
            WorkspaceChange {
                path: "big.bin".into(),
                kind: ChangeKind::Removed,
                before: None,
                after: None,
                undoable: false,
            },
        ];
        let s = unasked_reason(&list, Some(4), run);
        assert!(s.starts_with("the agent changed 2 files without asking Reins: NOTES.md (changed), big.bin (deleted)."), "{s}");
        assert!(s.contains(&format!("`reins rollback {run} --to 4 --dry-run`")), "{s}");
        assert!(s.contains("(all but big.bin, whose earlier content was too large to keep)"), "{s}");
        assert!(s.ends_with(&format!("`reins resume {run}` goes on with the files as they are")), "{s}");
        let none = unasked_reason(&list[1..], None, run);
        assert!(none.contains("so Reins cannot undo it"), "{none}");
    }
}
