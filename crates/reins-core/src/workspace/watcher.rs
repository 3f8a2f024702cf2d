//! Watching a workspace (crate `notify`; inotify on Linux) for the paths touched since they were
//! last taken, so the check after an agent's turn looks at those alone instead of walking the whole
//! tree. The set is trusted only while nothing can have been missed: the kernel's queue
//! overflowing, an error from the backend, the ignore rules or the folder itself changing all mark
//! it lost, and the caller rescans (`fingerprint::scan`), which is always correct.
//!
//! Git's own folder is not watched whole: its objects and refs are never in the fingerprint, and
//! a `git gc` or a checkout would fill the kernel's queue (and its watches) for nothing. So the
//! root is watched alone, each folder in it with everything below, and of `.git` only itself and
//! `info` (where `exclude`, an ignore rule, lives). A folder that appears in the root is watched
//! at the next take, before the take returns it touched, so the walk of it that follows finds
//! whatever was written in it before its watch began.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use notify::{RecursiveMode, Watcher as _};

/// How long a take waits for the watch to catch up with the moment it was asked.
const CATCH_UP: Duration = Duration::from_secs(5);

pub struct Watcher {
    watcher: notify::RecommendedWatcher,
    root: PathBuf,
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
    /// Folders that appeared in the root (or `.git/info`), to watch at the next take.
    unwatched: BTreeSet<PathBuf>,
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

/// How a folder is watched: the root's folders with all below them; the root, `.git` and
/// `.git/info` alone.
fn mode_of(root: &Path, dir: &Path) -> RecursiveMode {
    let git = root.join(".git");
    if dir == root || dir == git || dir == git.join("info") {
        RecursiveMode::NonRecursive
    } else {
        RecursiveMode::Recursive
    }
}

/// `dir` and, for `.git`, its `info` when there: the watches a folder of the root needs.
fn with_info(root: &Path, dir: PathBuf) -> Vec<PathBuf> {
    let info = dir.join("info");
    let git = dir == root.join(".git");
    let mut out = vec![dir];
    if git && is_dir(&info) {
        out.push(info);
    }
    out
}

/// A folder itself, not a link to one.
fn is_dir(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.is_dir())
}

/// The folders to watch under `root` as it is now (see the module's notes), the root first.
fn folders(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = vec![root.to_path_buf()];
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            out.extend(with_info(root, entry.path()));
        }
    }
    Ok(out)
}

impl Watcher {
    /// Watches the tree under `root` (every folder, new ones as they appear).
    pub fn start(root: &Path) -> Result<Self, String> {
        let shared = Arc::new(Shared::default());
        let marks = crate::scratch::create(crate::scratch::Kind::Watch)
            .map_err(|e| format!("a folder for the watch's marks: {e}"))?;
        let (base, mark_dir, inner) = (root.to_path_buf(), marks.clone(), Arc::clone(&shared));
        let info = root.join(".git").join("info");
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
                // A folder that appeared in the root, or `.git/info`: watched at the next take.
                if (path.parent() == Some(base.as_path()) || *path == info) && is_dir(path) {
                    s.unwatched.insert(path.clone());
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
            for dir in folders(root)? {
                watcher.watch(&dir, mode_of(root, &dir))?;
            }
            Ok::<_, notify::Error>(watcher)
        })();
        match started {
            Ok(watcher) => Ok(Self {
                watcher,
                root: root.to_path_buf(),
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
        let shared = Arc::clone(&self.shared);
        let Ok(s) = shared.state.lock() else {
            return Touched::Lost("the watch's state was poisoned".into());
        };
        // Every event from before the mark is handled once the mark's is, even after something
        // was lost: stopping early would leave them to the next take.
        let wait = if marked.is_ok() { CATCH_UP } else { Duration::ZERO };
        let waited = shared.marked.wait_timeout_while(s, wait, |s| s.mark < n);
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
        let lost = s.lost.take();
        let new = std::mem::take(&mut s.unwatched);
        // Not under the lock: the backend's thread takes it to hand over an event.
        drop(s);
        let lost = match self.watch_new(new) {
            Some(why) => Some(lost.unwrap_or(why)),
            None => lost,
        };
        match lost {
            Some(why) => Touched::Lost(why),
            None => Touched::Paths(touched.into_iter().collect()),
        }
    }

    /// Watches the folders that appeared (their events were handled before this take's mark).
    /// Each was touched when it appeared, so this take returns it and the caller walks it whole
    /// after its watch began: nothing written in it before then is missed. Why the set can no
    /// longer be trusted, if a folder could not be watched.
    fn watch_new(&mut self, dirs: BTreeSet<PathBuf>) -> Option<String> {
        let mut lost = None;
        for dir in dirs {
            // A repository made in the workspace: its `info` may already be there.
            for d in with_info(&self.root, dir) {
                match self.watcher.watch(&d, mode_of(&self.root, &d)) {
                    Ok(()) => {}
                    // Gone again before it was watched: its removal was seen.
                    Err(_) if !d.is_dir() => {}
                    Err(e) => {
                        lost.get_or_insert_with(|| {
                            format!("the watch could not follow {}: {e}", d.display())
                        });
                    }
                }
            }
        }
        lost
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
        // Made, moved or removed whole: `exclude` with it, unseen.
        [".git"] | [".git", "info"] => Seen::Lost("the ignore rules changed (.git/info)"),
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

    fn write(root: &Path, rel: &str) -> std::io::Result<()> {
        let p = root.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(p, rel)
    }

    /// The inodes every inotify instance of this process watches (from `/proc/self/fdinfo`).
    fn watched_inodes() -> anyhow::Result<BTreeSet<u64>> {
        let mut out = BTreeSet::new();
        for entry in std::fs::read_dir("/proc/self/fdinfo")? {
            let Ok(text) = std::fs::read_to_string(entry?.path()) else {
                continue;
            };
            for line in text.lines().filter(|l| l.starts_with("inotify wd:")) {
                if let Some(ino) = line.split_whitespace().find_map(|f| f.strip_prefix("ino:")) {
                    out.insert(u64::from_str_radix(ino, 16)?);
                }
            }
        }
        Ok(out)
    }

    fn inode(path: &Path) -> anyhow::Result<u64> {
        use std::os::unix::fs::MetadataExt as _;
        Ok(std::fs::metadata(path)?.ino())
    }

    #[test]
    fn gits_objects_are_not_watched_but_its_ignore_rules_are() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        for i in 0..20 {
            write(root, &format!(".git/objects/{i:02x}/obj"))?;
        }
        write(root, ".git/info/exclude")?;
        write(root, "src/deep/a.rs")?;
        let mut watcher = Watcher::start(root).map_err(anyhow::Error::msg)?;
        let watched = watched_inodes()?;
        for folder in ["", "src", "src/deep", ".git", ".git/info"] {
            assert!(watched.contains(&inode(&root.join(folder))?), "{folder:?} is watched");
        }
        for folder in [".git/objects", ".git/objects/00", ".git/objects/13"] {
            assert!(!watched.contains(&inode(&root.join(folder))?), "{folder} is not watched");
        }
        // Git's own writes are not seen at all; a rule it keeps is.
        write(root, ".git/objects/aa/new")?;
        assert_eq!(watcher.take(), Touched::Paths(Vec::new()));
        std::fs::write(root.join(".git/info/exclude"), "*.log\n")?;
        assert!(matches!(watcher.take(), Touched::Lost(why) if why.contains("exclude")));
        Ok(())
    }

    #[test]
    fn a_folder_or_a_repository_made_after_the_start_is_followed() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        let mut watcher = Watcher::start(root).map_err(anyhow::Error::msg)?;
        // A new folder is returned whole (the caller walks it), then watched below.
        write(root, "fresh/a/b.txt")?;
        assert_eq!(watcher.take(), Touched::Paths(vec!["fresh".into()]));
        write(root, "fresh/a/c.txt")?;
        assert_eq!(watcher.take(), Touched::Paths(vec!["fresh/a/c.txt".into()]));
        // `git init`: its rules may hide anything, so the next check rescans; then its `exclude`
        // is watched, and its objects are not.
        write(root, ".git/info/exclude")?;
        assert!(matches!(watcher.take(), Touched::Lost(why) if why.contains(".git")));
        write(root, ".git/objects/ab/obj")?;
        assert_eq!(watcher.take(), Touched::Paths(Vec::new()));
        std::fs::write(root.join(".git/info/exclude"), "fresh/\n")?;
        assert!(matches!(watcher.take(), Touched::Lost(why) if why.contains("exclude")));
        Ok(())
    }
}
