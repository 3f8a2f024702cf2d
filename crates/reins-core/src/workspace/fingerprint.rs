//! A fingerprint of the workspace: every file's size and modification time, and a SHA-256 for the
//! files whose size or time changed since the previous fingerprint. Comparing two tells what changed
//! in between; the engine subtracts what the run itself changed, and what is left was changed from
//! outside the run (an editor, a colleague, another tool) — the agent and the person must know.
//!
//! `.gitignore` and `.git/info/exclude` are respected, `.git/` is skipped, symbolic links are not
//! followed. Walking is parallel; hashing happens only where the size or time moved, so a second
//! fingerprint of an unchanged tree costs about what `git status` does.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;

/// How close to a scan a modification time must be to count as racy (filesystem time granularity).
const RACY_NS: i64 = 2_000_000_000;

/// Files larger than this are compared by size and time only.
pub const MAX_HASHED_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// When the scan started, in nanoseconds since the epoch. A file modified so close to it that
    /// a later change could keep the same time and size is "racy" and hashed again next time.
    #[serde(default)]
    pub taken_at: i64,
    /// Path relative to the root, `/`-separated → its stat (and hash, when known).
    pub entries: BTreeMap<String, Stat>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    pub size: u64,
    /// Nanoseconds since the epoch.
    pub mtime: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Digest>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum ChangeKind {
    Added,
    Modified,
    Removed,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Change {
    pub path: String,
    pub kind: ChangeKind,
    /// The content now, when hashed (None: removed, or too large to hash).
    pub sha256: Option<Digest>,
}

/// What a scan did, for benchmarks and logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub files: usize,
    pub hashed: usize,
}

impl Fingerprint {
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

/// A walk of the tree under `root` as a fingerprint sees it: `.gitignore` files where they stand
/// and `.git/info/exclude`, nothing from outside the tree, hidden files included, links not
/// followed (the caller skips `.git/`).
pub(super) fn walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(false)
        .parents(false)
        .require_git(false)
        .follow_links(false);
    builder
}

/// Fingerprints the tree under `root`, reusing `previous` hashes where size and time are unchanged.
pub fn scan(root: &Path, previous: &Fingerprint) -> std::io::Result<(Fingerprint, ScanStats)> {
    let taken_at = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    )
    .unwrap_or(i64::MAX);
    let found: Mutex<Vec<Found>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<std::io::Error>> = Mutex::new(None);
    let mut builder = walker(root);
    builder
        .threads(std::thread::available_parallelism().map_or(2, |n| n.get().min(8)))
        .filter_entry(|e| e.file_name() != ".git");
    // A hash index over the previous entries: one lookup per file, without string comparisons.
    let previous_index: std::collections::HashMap<&str, &Stat> = previous
        .entries
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let mut collectors = Collectors {
        root,
        previous: &previous_index,
        // Stat times are trusted only when older than the previous scan by a margin.
        trusted_before: previous.taken_at.saturating_sub(RACY_NS),
        found: &found,
        failure: &failure,
    };
    builder.build_parallel().visit(&mut collectors);
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let found = found.into_inner().unwrap_or_default();
    let stats = ScanStats {
        files: found.len(),
        hashed: found.iter().filter(|f| f.hashed).count(),
    };
    let entries = found.into_iter().map(|f| (f.path, f.stat)).collect();
    Ok((Fingerprint { taken_at, entries }, stats))
}

struct Found {
    path: String,
    stat: Stat,
    hashed: bool,
}

/// Builds one collector per walker thread.
struct Collectors<'s> {
    root: &'s Path,
    previous: &'s std::collections::HashMap<&'s str, &'s Stat>,
    trusted_before: i64,
    found: &'s Mutex<Vec<Found>>,
    failure: &'s Mutex<Option<std::io::Error>>,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for Collectors<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Collector {
            root: self.root,
            previous: self.previous,
            trusted_before: self.trusted_before,
            found: self.found,
            failure: self.failure,
            local: Vec::new(),
        })
    }
}

/// One walker thread's findings, kept locally and handed over once when the thread is done.
struct Collector<'s> {
    root: &'s Path,
    previous: &'s std::collections::HashMap<&'s str, &'s Stat>,
    trusted_before: i64,
    found: &'s Mutex<Vec<Found>>,
    failure: &'s Mutex<Option<std::io::Error>>,
    local: Vec<Found>,
}

impl Drop for Collector<'_> {
    fn drop(&mut self) {
        if let Ok(mut all) = self.found.lock() {
            all.append(&mut self.local);
        }
    }
}

impl ignore::ParallelVisitor for Collector<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        use ignore::WalkState::{Continue, Quit};
        let entry = match entry {
            Ok(e) => e,
            // An unreadable directory below the root: note it and go on.
            Err(e) => {
                tracing::debug!("fingerprint: {e}");
                return Continue;
            }
        };
        let Some(kind) = entry.file_type() else {
            return Continue;
        };
        if kind.is_dir() {
            return Continue;
        }
        let Some(rel) = entry
            .path()
            .strip_prefix(self.root)
            .ok()
            .and_then(Path::to_str)
        else {
            return Continue;
        };
        if rel.contains(".reins-tmp-") {
            return Continue;
        }
        let meta = match entry.path().symlink_metadata() {
            Ok(m) => m,
            Err(_) => return Continue, // gone since listed
        };
        let stat = stat_of(&meta);
        let reusable = self.previous.get(rel).copied().filter(|p| {
            p.size == stat.size && p.mtime == stat.mtime && p.mtime < self.trusted_before
        });
        let (stat, hashed) = match reusable {
            Some(prev) => (prev.clone(), false),
            None if kind.is_file() && stat.size <= MAX_HASHED_BYTES => {
                match hash_file(entry.path()) {
                    Ok(d) => (
                        Stat {
                            sha256: Some(d),
                            ..stat
                        },
                        true,
                    ),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Continue,
                    Err(e) => {
                        if let Ok(mut f) = self.failure.lock() {
                            f.get_or_insert(e);
                        }
                        return Quit;
                    }
                }
            }
            None => (stat, false),
        };
        self.local.push(Found {
            path: rel.to_owned(),
            stat,
            hashed,
        });
        Continue
    }
}

pub(super) fn stat_of(meta: &std::fs::Metadata) -> Stat {
    use std::os::unix::fs::MetadataExt as _;
    Stat {
        size: meta.len(),
        mtime: meta
            .mtime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.mtime_nsec()),
        sha256: None,
    }
}

pub(super) fn hash_file(path: &Path) -> std::io::Result<Digest> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = crate::digest::Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(hasher.finish());
        }
        hasher.update(&buf[..n]);
    }
}

/// What differs from `old` to `new`. A file whose stat moved but whose hash is the same in both
/// (touched, not changed) is not a change; one whose old hash is unknown counts as modified.
pub fn diff(old: &Fingerprint, new: &Fingerprint) -> Vec<Change> {
    let mut changes: Vec<Change> = new
        .entries
        .iter()
        .filter_map(|(path, n)| change_of(path, old.entries.get(path), Some(n)))
        .collect();
    for (path, o) in &old.entries {
        if !new.entries.contains_key(path) {
            changes.extend(change_of(path, Some(o), None));
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

/// How one path changed from `old` to `new` (None: absent), if it did.
pub(super) fn change_of(path: &str, old: Option<&Stat>, new: Option<&Stat>) -> Option<Change> {
    let kind = match (old, new) {
        (None, None) => return None,
        (None, Some(_)) => ChangeKind::Added,
        (Some(_), None) => ChangeKind::Removed,
        (Some(o), Some(n)) if o == n => return None,
        (Some(o), Some(n)) if o.sha256.is_some() && o.sha256 == n.sha256 => return None,
        (Some(_), Some(_)) => ChangeKind::Modified,
    };
    Some(Change {
        path: path.to_owned(),
        kind,
        sha256: new.and_then(|n| n.sha256.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) -> std::io::Result<()> {
        let p = root.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(p, text)
    }

    #[test]
    fn changes_between_scans_are_named_and_ignored_files_are_not() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        write(root, ".gitignore", "build/\n*.log\n")?;
        write(root, "src/a.rs", "fn a() {}")?;
        write(root, "src/b.rs", "fn b() {}")?;
        write(root, ".env", "X=1")?;
        write(root, "build/out.bin", "binary")?;
        write(root, "app.log", "log")?;
        write(root, ".git/HEAD", "ref: refs/heads/main")?;
        let (first, stats) = scan(root, &Fingerprint::default())?;
        let paths: Vec<&str> = first.entries.keys().map(String::as_str).collect();
        assert_eq!(paths, [".env", ".gitignore", "src/a.rs", "src/b.rs"]);
        assert_eq!(stats.hashed, 4, "a first scan hashes what it finds");

        write(root, "src/a.rs", "fn a() { changed }")?;
        std::fs::remove_file(root.join("src/b.rs"))?;
        write(root, "src/c.rs", "fn c() {}")?;
        write(root, "build/out.bin", "rebuilt")?;
        // As if the first scan were long ago, so unchanged stat times are trusted.
        let first = Fingerprint {
            taken_at: i64::MAX,
            ..first
        };
        let (second, stats) = scan(root, &first)?;
        assert_eq!(stats.hashed, 2, "only what moved is hashed again");
        let changes: Vec<(String, ChangeKind)> = diff(&first, &second)
            .into_iter()
            .map(|c| (c.path, c.kind))
            .collect();
        assert_eq!(
            changes,
            [
                ("src/a.rs".to_owned(), ChangeKind::Modified),
                ("src/b.rs".to_owned(), ChangeKind::Removed),
                ("src/c.rs".to_owned(), ChangeKind::Added),
            ]
        );
        Ok(())
    }

    #[test]
    fn nested_ignore_files_and_negations_apply_where_they_stand() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        write(root, ".gitignore", "*.tmp\n")?;
        write(root, "a/.gitignore", "secret/\n!keep.tmp\n")?;
        write(root, "a/x.tmp", "ignored by the root rule")?;
        write(root, "a/keep.tmp", "re-included by a/.gitignore")?;
        write(root, "a/secret/s.txt", "ignored folder")?;
        write(root, "b/secret/s.txt", "the rule is a/'s only")?;
        write(root, ".git/info/exclude", "local-only.txt\n")?;
        write(root, "local-only.txt", "excluded locally")?;
        let (fp, _) = scan(root, &Fingerprint::default())?;
        let paths: Vec<&str> = fp.entries.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            [".gitignore", "a/.gitignore", "a/keep.tmp", "b/secret/s.txt"]
        );
        Ok(())
    }

    #[test]
    fn touching_a_file_without_changing_it_is_not_a_change() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        write(dir.path(), "a.txt", "same")?;
        let (first, _) = scan(dir.path(), &Fingerprint::default())?;
        std::thread::sleep(std::time::Duration::from_millis(20));
        write(dir.path(), "a.txt", "same")?;
        let (second, stats) = scan(dir.path(), &first)?;
        assert_eq!(stats.hashed, 1, "its time moved, so it was hashed");
        assert!(diff(&first, &second).is_empty());
        Ok(())
    }

    #[test]
    fn a_change_in_the_same_instant_as_the_scan_is_not_missed() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        write(dir.path(), "a.txt", "one")?;
        let (first, _) = scan(dir.path(), &Fingerprint::default())?;
        // Same size; put the time back to what the first scan saw.
        write(dir.path(), "a.txt", "two")?;
        let mtime = first.entries.get("a.txt").map_or(0, |s| s.mtime);
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(u64::try_from(mtime)?);
        std::fs::File::options()
            .write(true)
            .open(dir.path().join("a.txt"))?
            .set_modified(t)?;
        let (second, _) = scan(dir.path(), &first)?;
        let changed: Vec<_> = diff(&first, &second).into_iter().map(|c| c.path).collect();
        assert_eq!(changed, ["a.txt"], "a racy entry is hashed again");
        Ok(())
    }
}
