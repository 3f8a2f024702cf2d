//! Watching the files pending approvals would change (crate `notify`): a change on disk marks the
//! approval stale at once — it is superseded by a fresh one with the current diff — so nobody
//! approves a diff that no longer matches. The folders holding the files are watched (a file that
//! does not exist yet has no inode to watch).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};

use notify::{RecursiveMode, Watcher as _};

pub struct Watch {
    watcher: notify::RecommendedWatcher,
    events: Receiver<notify::Result<notify::Event>>,
    dirs: BTreeSet<PathBuf>,
}

impl Watch {
    pub fn new() -> notify::Result<Self> {
        let (tx, events) = channel();
        let watcher = notify::recommended_watcher(move |e| {
            let _ = tx.send(e);
        })?;
        Ok(Self {
            watcher,
            events,
            dirs: BTreeSet::new(),
        })
    }

    /// Watches exactly the folders of `files` (adding new ones, dropping ones no longer needed).
    pub fn sync<'a>(&mut self, files: impl IntoIterator<Item = &'a Path>) {
        let want: BTreeSet<PathBuf> = files
            .into_iter()
            .filter_map(|f| f.parent().map(Path::to_owned))
            .collect();
        for gone in self.dirs.difference(&want).cloned().collect::<Vec<_>>() {
            let _ = self.watcher.unwatch(&gone);
            self.dirs.remove(&gone);
        }
        for dir in want {
            if !self.dirs.contains(&dir)
                && self
                    .watcher
                    .watch(&dir, RecursiveMode::NonRecursive)
                    .is_ok()
            {
                self.dirs.insert(dir);
            }
        }
    }

    /// The paths changed since the last call.
    pub fn changed(&mut self) -> BTreeSet<PathBuf> {
        let mut out = BTreeSet::new();
        while let Ok(event) = self.events.try_recv() {
            if let Ok(e) = event {
                if matches!(e.kind, notify::EventKind::Access(_)) {
                    continue;
                }
                out.extend(e.paths);
            }
        }
        out
    }

    pub fn watched(&self) -> usize {
        self.dirs.len()
    }
}
