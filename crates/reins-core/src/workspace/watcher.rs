//! Watching a workspace (crate `notify`; inotify on Linux) for the paths touched since they were
//! last taken, so the check after an agent's turn looks at those alone instead of walking the whole
//! tree. The set is trusted only while nothing can have been missed: the kernel's queue
//! overflowing, an error from the backend, the ignore rules or the folder itself changing all mark
//! it lost, and the caller rescans (`fingerprint::scan`), which is always correct.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use notify::{RecursiveMode, Watcher as _};

/// How long a take waits for the watch to catch up with the moment it was asked.
const CATCH_UP: Duration = Duration::from_secs(5);

pub struct Watcher {
    watcher: notify::RecommendedWatcher,
    shared: Arc<Shared>,
    /// A folder of Reins' own, watched beside the workspace: a take marks the moment it is asked
    /// with a file here and waits for its event, so every event before it has been seen (one
    /// queue of events, in order).
    marks: PathBuf,
    next_mark: u64,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    marked: Condvar,
}

#[derive(Default)]
struct State {
    touched: BTreeSet<String>,
    lost: Option<String>,
    /// The latest mark whose event arrived.
    mark: u64,
}

/// What changed since the last take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Touched {
    /// Every path touched (relative, `/`-separated), and nothing else changed.
    Paths(Vec<String>),
    /// Something may have been missed: why.
    Lost(String),
}

/// What one event's path means for the set.
enum Seen {
    Path(String),
    Skip,
    Lost(&'static str),
}

impl Watcher {
    /// Watches the tree under `root` (every folder, new ones as they appear).
    pub fn start(root: &Path) -> Result<Self, String> {
        let shared = Arc::new(Shared::default());
        let marks = crate::scratch::create(crate::scratch::Kind::Watch)
            .map_err(|e| format!("a folder for the watch's marks: {e}"))?;
        let (base, mark_dir, inner) = (root.to_path_buf(), marks.clone(), Arc::clone(&shared));
        let handler = move |event: notify::Result<notify::Event>| {
            let Ok(mut s) = inner.state.lock() else {
                return;
            };
            let event = match event {
                Ok(e) => e,
                Err(e) => {
                    s.lost.get_or_insert_with(|| format!("the watch failed: {e}"));
                    return;
                }
            };
            if event.need_rescan() {
                s.lost
                    .get_or_insert_with(|| "the kernel's queue of file events overflowed".into());
                return;
            }
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            for path in &event.paths {
                if let Ok(mark) = path.strip_prefix(&mark_dir) {
                    let n = mark.to_str().and_then(|m| m.parse::<u64>().ok()).unwrap_or(0);
                    s.mark = s.mark.max(n);
                    inner.marked.notify_all();
                    continue;
                }
                match seen(&base, path) {
                    Seen::Path(rel) => {
                        s.touched.insert(rel);
                    }
                    Seen::Skip => {}
                    Seen::Lost(why) => {
                        s.lost.get_or_insert_with(|| why.into());
                    }
                }
            }
        };
        let started = (|| {
            let mut watcher = notify::recommended_watcher(handler)?;
            watcher.watch(&marks, RecursiveMode::NonRecursive)?;
            watcher.watch(root, RecursiveMode::Recursive)?;
            Ok::<_, notify::Error>(watcher)
        })();
        match started {
            Ok(watcher) => Ok(Self {
                watcher,
                shared,
                marks,
                next_mark: 0,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&marks);
                Err(e.to_string())
            }
        }
    }

    /// The paths touched until now (since the last take, or the start), and starts a new set.
    pub fn take(&mut self) -> Touched {
        self.next_mark += 1;
        let n = self.next_mark;
        let mark = self.marks.join(n.to_string());
        let marked = std::fs::write(&mark, b"");
        if let Err(e) = &marked {
            self.lose(format!("the watch could not mark the moment: {e}"));
        }
        let Ok(s) = self.shared.state.lock() else {
            return Touched::Lost("the watch's state was poisoned".into());
        };
        // Every event from before the mark is handled once the mark's is, even after something
        // was lost: stopping early would leave them to the next take.
        let wait = if marked.is_ok() { CATCH_UP } else { Duration::ZERO };
        let waited = self
            .shared
            .marked
            .wait_timeout_while(s, wait, |s| s.mark < n);
        let _ = std::fs::remove_file(&mark);
        let Ok((mut s, timeout)) = waited else {
            return Touched::Lost("the watch's state was poisoned".into());
        };
        if timeout.timed_out() && s.mark < n {
            s.lost.get_or_insert_with(|| {
                format!("the watch did not catch up within {} s", CATCH_UP.as_secs())
            });
        }
        let touched = std::mem::take(&mut s.touched);
        match s.lost.take() {
            Some(why) => Touched::Lost(why),
            None => Touched::Paths(touched.into_iter().collect()),
        }
    }

    fn lose(&self, why: String) {
        if let Ok(mut s) = self.shared.state.lock() {
            s.lost.get_or_insert(why);
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.watcher.unwatch(&self.marks);
        let _ = std::fs::remove_dir_all(&self.marks);
    }
}

/// Where an event's path stands: a path in the fingerprint's terms, one it never holds (Git's
/// own files, Reins' temporary files, names that are not UTF-8), or a change the set cannot carry.
fn seen(root: &Path, path: &Path) -> Seen {
    let Ok(rel) = path.strip_prefix(root) else {
        return Seen::Skip;
    };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => match p.to_str() {
                Some(p) => parts.push(p),
                None => return Seen::Skip,
            },
            _ => return Seen::Skip,
        }
    }
    match parts.as_slice() {
        [] => Seen::Lost("the workspace folder itself changed"),
        [".git", "info", "exclude"] => Seen::Lost("the ignore rules changed (.git/info/exclude)"),
        [".git", ..] => Seen::Skip,
        [.., ".gitignore"] => Seen::Lost("the ignore rules changed (a .gitignore)"),
        _ => {
            let rel = parts.join("/");
            if rel.contains(".reins-tmp-") {
                Seen::Skip
            } else {
                Seen::Path(rel)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_the_fingerprints_or_none_and_rule_changes_are_lost() {
        let root = Path::new("/ws");
        let path = |p: &str| match seen(root, &root.join(p)) {
            Seen::Path(p) => format!("path {p}"),
            Seen::Skip => "skip".into(),
            Seen::Lost(why) => format!("lost: {why}"),
        };
        assert_eq!(path("src/a.rs"), "path src/a.rs");
        assert_eq!(path(".git/index"), "skip");
        assert_eq!(path("src/.a.rs.reins-tmp-1"), "skip");
        assert!(path("sub/.gitignore").starts_with("lost"));
        assert!(path(".git/info/exclude").starts_with("lost"));
        assert!(matches!(seen(root, root), Seen::Lost(_)));
        assert!(matches!(seen(root, Path::new("/elsewhere/x")), Seen::Skip));
    }
}
