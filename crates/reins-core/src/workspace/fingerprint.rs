//! A fingerprint of the workspace: every file's size and modification time, and a SHA-256 for the
//! files whose size or time changed since the previous fingerprint. Comparing two tells what changed
//! in between; the engine subtracts what the run itself changed, and what is left was changed from
//! outside the run (an editor, a colleague, another tool) — the agent and the person must know.
//!
//! `.gitignore` and `.git/info/exclude` are respected, `.git/` is skipped, symbolic links are not
//! followed (`walk.rs`). Hashing happens only where the size or time moved, so a second
//! fingerprint of an unchanged tree costs about what `git status` does.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::walk;
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

/// Fingerprints the tree under `root`, reusing `previous` hashes where size and time are unchanged.
pub fn scan(root: &Path, previous: &Fingerprint) -> std::io::Result<(Fingerprint, ScanStats)> {
    let taken_at = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    )
    .unwrap_or(i64::MAX);
    // Stat times are trusted only when older than the previous scan by a margin.
    let trusted_before = previous.taken_at.saturating_sub(RACY_NS);
    let visit = |found: &mut Vec<Found>, folder: &str, files: &[walk::File<'_>]| {
        // The folder's files as the previous fingerprint has them, in the same (name) order.
        let mut before = InFolder::new(&previous.entries, folder).peekable();
        for file in files {
            let name = file.name();
            while before.next_if(|(n, _)| *n < name).is_some() {}
            let before = before.next_if(|(n, _)| *n == name).map(|(_, s)| s);
            let reusable = |now: &Stat| {
                before.filter(|p| {
                    p.size == now.size && p.mtime == now.mtime && p.mtime < trusted_before
                })
            };
            let Some((stat, hashed)) = look(file, reusable)? else {
                continue;
            };
            found.push(Found {
                path: file.rel.to_owned(),
                stat,
                hashed,
            });
        }
        Ok(())
    };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    // Each thread sorts what it found; the runs are then merged.
    let by_path = |found: &mut Vec<Found>| found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let mut found = walk::walk(root, threads, &|_, _| true, &visit, &by_path)?;
    found.sort_by(|a, b| a.path.cmp(&b.path));
    let stats = ScanStats {
        files: found.len(),
        hashed: found.iter().filter(|f| f.hashed).count(),
    };
    let entries = found.into_iter().map(|f| (f.path, f.stat)).collect();
    Ok((Fingerprint { taken_at, entries }, stats))
}

/// What `file` holds now, and whether it was hashed: the stat `reusable` gives for its stat now
/// (a previous one whose hash still holds), else its stat now, hashed if it is a file small enough.
/// None: one of Reins' temporary files, or gone since its folder was listed.
pub(super) fn look<'p>(
    file: &walk::File<'_>,
    reusable: impl FnOnce(&Stat) -> Option<&'p Stat>,
) -> std::io::Result<Option<(Stat, bool)>> {
    if file.rel.contains(".reins-tmp-") {
        return Ok(None);
    }
    let Ok(stat) = file.stat() else {
        return Ok(None);
    };
    if let Some(previous) = reusable(&stat) {
        return Ok(Some((previous.clone(), false)));
    }
    if !file.is_file() || stat.size > MAX_HASHED_BYTES {
        return Ok(Some((stat, false)));
    }
    match file.hash() {
        Ok(d) => Ok(Some((
            Stat {
                sha256: Some(d),
                ..stat
            },
            true,
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

struct Found {
    path: String,
    stat: Stat,
    hashed: bool,
}

/// The entries of a fingerprint directly in one folder, by name, in order: one pass over the
/// folder's stretch of the map, stepping over each subfolder's stretch with one seek.
struct InFolder<'a> {
    entries: &'a BTreeMap<String, Stat>,
    prefix: String,
    range: std::collections::btree_map::Range<'a, String, Stat>,
}

impl<'a> InFolder<'a> {
    fn new(entries: &'a BTreeMap<String, Stat>, folder: &str) -> Self {
        let prefix = if folder.is_empty() {
            String::new()
        } else {
            format!("{folder}/")
        };
        let range = entries.range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded));
        Self {
            entries,
            prefix,
            range,
        }
    }
}

impl<'a> Iterator for InFolder<'a> {
    type Item = (&'a str, &'a Stat);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (path, stat) = self.range.next()?;
            let rest = path.strip_prefix(self.prefix.as_str())?;
            match rest.find('/') {
                None => return Some((rest, stat)),
                Some(i) => {
                    // Past everything under this subfolder: '0' is the byte after '/'.
                    let past = format!("{}{}0", self.prefix, &rest[..i]);
                    self.range = self
                        .entries
                        .range::<str, _>((Bound::Included(past.as_str()), Bound::Unbounded));
                }
            }
        }
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

    #[test]
    fn a_folders_entries_are_read_in_order_stepping_over_subfolders() {
        let stat = |size| Stat {
            size,
            mtime: 0,
            sha256: None,
        };
        let entries: BTreeMap<String, Stat> = [
            "a.txt", "a/x", "a/y/z", "a0", "b", "b/c/d", "b/e", "b.txt", "c", "d/x",
        ]
        .iter()
        .zip(0u64..)
        .map(|(p, i)| ((*p).to_owned(), stat(i)))
        .collect();
        let names = |folder: &str| -> Vec<(String, u64)> {
            InFolder::new(&entries, folder)
                .map(|(n, s)| (n.to_owned(), s.size))
                .collect()
        };
        let own = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
            v.iter().map(|(n, s)| ((*n).to_owned(), *s)).collect()
        };
        assert_eq!(names(""), own(&[("a.txt", 0), ("a0", 3), ("b", 4), ("b.txt", 7), ("c", 8)]));
        assert_eq!(names("a"), own(&[("x", 1)]));
        assert_eq!(names("b"), own(&[("e", 6)]));
        assert_eq!(names("b/c"), own(&[("d", 5)]));
        assert!(names("e").is_empty());
    }

    #[test]
    fn a_rescan_of_an_unchanged_nested_tree_hashes_nothing() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        for rel in ["a.txt", "a/x", "a/y/z", "a0", "b.txt", "b/c/d", "b/e", "c-d/e", "c/d"] {
            write(dir.path(), rel, rel)?;
        }
        let (first, stats) = scan(dir.path(), &Fingerprint::default())?;
        assert_eq!((stats.files, stats.hashed), (9, 9));
        let trusted = Fingerprint {
            taken_at: i64::MAX,
            ..first.clone()
        };
        let (second, stats) = scan(dir.path(), &trusted)?;
        assert_eq!((stats.files, stats.hashed), (9, 0), "every file found in the previous");
        assert_eq!(second.entries, first.entries);
        Ok(())
    }
}
