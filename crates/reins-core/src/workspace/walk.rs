//! The walk a fingerprint takes of a workspace. Every folder is listed once (`getdents`), on a
//! few threads, and each file in it is looked at relative to the open folder (`statx` and
//! `openat` on the folder's descriptor), so no file's path is resolved from the root again: that
//! lookup was most of a rescan's time.
//!
//! The ignore rules are Git's, read with the `ignore` crate's matcher: each folder's `.gitignore`
//! for what is below it (the nearest rule that matches decides), then `.git/info/exclude` where
//! a repository starts. `.git` is never entered, hidden files are included, links are not followed.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, StatxFlags};

use super::fingerprint::Stat;
use crate::digest::Digest;

/// One entry of a folder that is not a folder: a file, a link, or something stranger.
pub(super) struct File<'a> {
    /// Relative to the root, `/`-separated.
    pub rel: &'a str,
    /// Where its name starts in `rel`.
    name_at: usize,
    dir: BorrowedFd<'a>,
    name: &'a CStr,
    kind: FileType,
}

impl File<'_> {
    /// Its name in its folder.
    pub fn name(&self) -> &str {
        self.rel.get(self.name_at..).unwrap_or(self.rel)
    }

    pub fn is_file(&self) -> bool {
        self.kind == FileType::RegularFile
    }

    /// Its size and modification time, the link itself for a link.
    pub fn stat(&self) -> std::io::Result<Stat> {
        let s = rustix::fs::statx(
            self.dir,
            self.name,
            AtFlags::SYMLINK_NOFOLLOW,
            StatxFlags::SIZE | StatxFlags::MTIME,
        )?;
        Ok(Stat {
            size: s.stx_size,
            mtime: s
                .stx_mtime
                .tv_sec
                .saturating_mul(1_000_000_000)
                .saturating_add(i64::from(s.stx_mtime.tv_nsec)),
            sha256: None,
        })
    }

    /// The SHA-256 of its content.
    pub fn hash(&self) -> std::io::Result<Digest> {
        let fd = rustix::fs::openat(
            self.dir,
            self.name,
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        hash_reader(std::fs::File::from(fd))
    }
}

fn hash_reader(mut from: impl std::io::Read) -> std::io::Result<Digest> {
    let mut hasher = crate::digest::Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(hasher.finish());
        }
        hasher.update(&buf[..n]);
    }
}

/// The ignore rules in force in one folder: its own, and those of the folders above it.
struct Rules {
    /// The folder, relative to the root ("" for the root).
    dir: String,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
    parent: Option<Arc<Rules>>,
}

impl Rules {
    /// Whether `rel` (below this folder) is ignored. As Git reads them: the `.gitignore` nearest
    /// to the path that has a matching rule decides; failing any, the repository's exclude file.
    fn ignored(&self, rel: &str, is_dir: bool) -> bool {
        let (mut by_gitignore, mut by_exclude) = (Match::None, Match::None);
        let mut node = Some(self);
        while let Some(r) = node {
            let local = if r.dir.is_empty() {
                rel
            } else {
                rel.get(r.dir.len() + 1..).unwrap_or(rel)
            };
            if let (true, Some(g)) = (by_gitignore.is_none(), &r.gitignore) {
                by_gitignore = g.matched(Path::new(local), is_dir);
            }
            if let (true, Some(g)) = (by_exclude.is_none(), &r.exclude) {
                by_exclude = g.matched(Path::new(local), is_dir);
            }
            node = r.parent.as_deref();
        }
        by_gitignore.or(by_exclude).is_ignore()
    }

    /// The rules below `dir`, which holds a `.gitignore` and/or a `.git`.
    fn below(
        parent: Option<Arc<Rules>>,
        abs: &Path,
        dir: &str,
        gitignore: bool,
        git: Option<FileType>,
    ) -> Arc<Rules> {
        let gitignore = gitignore.then(|| matcher(abs, &abs.join(".gitignore")));
        let exclude = git
            .and_then(|kind| git_dir(abs, kind))
            .map(|g| matcher(abs, &g.join("info").join("exclude")));
        Arc::new(Rules {
            dir: dir.to_owned(),
            gitignore: gitignore.filter(|g| !g.is_empty()),
            exclude: exclude.filter(|g| !g.is_empty()),
            parent,
        })
    }
}

fn matcher(root: &Path, file: &Path) -> Gitignore {
    let mut builder = GitignoreBuilder::new(root);
    if let Some(e) = builder.add(file) {
        tracing::debug!("ignore rules in {}: {e}", file.display());
    }
    builder.build().unwrap_or_else(|e| {
        tracing::debug!("ignore rules in {}: {e}", file.display());
        Gitignore::empty()
    })
}

/// The repository folder a `.git` in `dir` stands for: itself, or, for a worktree or a
/// submodule's `.git` file, the common folder it names.
fn git_dir(dir: &Path, kind: FileType) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    if kind == FileType::Directory {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let named = dir.join(text.lines().next()?.strip_prefix("gitdir: ")?.trim());
    match std::fs::read_to_string(named.join("commondir")) {
        Ok(common) => Some(named.join(common.trim())),
        Err(_) => Some(named),
    }
}

/// Looks at one folder's files (see `walk`).
pub(super) type Visit<'f, T> =
    dyn Fn(&mut Vec<T>, &str, &[File<'_>]) -> std::io::Result<()> + Sync + 'f;

/// A folder waiting to be listed.
struct Job {
    rel: String,
    rules: Option<Arc<Rules>>,
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Threads listing a folder now.
    busy: usize,
    failure: Option<std::io::Error>,
}

/// Walks the tree under `root` on `threads` threads. `enter(rel, is_dir)` says whether to look at
/// an entry the ignore rules let through (into a folder, at a file); `visit(found, folder, files)`
/// looks at one folder's files, in name order, and adds what it finds to its thread's list, and
/// `done` is given that list on its thread when the thread has no more to do (to sort it there).
/// The threads' lists are returned one after another. The first error from `visit` stops the walk and is
/// returned; a folder that cannot be listed is passed over, as it was when it could not be read.
pub(super) fn walk<T: Send>(
    root: &Path,
    threads: usize,
    enter: &(dyn Fn(&str, bool) -> bool + Sync),
    visit: &Visit<'_, T>,
    done: &(dyn Fn(&mut Vec<T>) + Sync),
) -> std::io::Result<Vec<T>> {
    let root_fd = match open_dir(rustix::fs::CWD, root) {
        Ok(fd) => fd,
        Err(e) => {
            tracing::debug!("fingerprint: {}: {e}", root.display());
            return Ok(Vec::new());
        }
    };
    let queue = Mutex::new(Queue {
        jobs: vec![Job {
            rel: String::new(),
            rules: None,
        }],
        ..Queue::default()
    });
    let ready = Condvar::new();
    let found: Mutex<Vec<T>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                let mut local = Vec::new();
                worker(root, root_fd.as_fd(), &queue, &ready, enter, visit, &mut local);
                done(&mut local);
                if let Ok(mut all) = found.lock() {
                    all.append(&mut local);
                }
            });
        }
    });
    let queue = queue.into_inner().map_err(|_| poisoned())?;
    if let Some(e) = queue.failure {
        return Err(e);
    }
    found.into_inner().map_err(|_| poisoned())
}

fn poisoned() -> std::io::Error {
    std::io::Error::other("a walking thread panicked")
}

fn worker<T>(
    root: &Path,
    root_fd: BorrowedFd<'_>,
    queue: &Mutex<Queue>,
    ready: &Condvar,
    enter: &(dyn Fn(&str, bool) -> bool + Sync),
    visit: &Visit<'_, T>,
    local: &mut Vec<T>,
) {
    loop {
        let job = {
            let Ok(mut q) = queue.lock() else { return };
            loop {
                if q.failure.is_some() {
                    return;
                }
                if let Some(job) = q.jobs.pop() {
                    q.busy += 1;
                    break job;
                }
                if q.busy == 0 {
                    ready.notify_all();
                    return;
                }
                q = match ready.wait(q) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            }
        };
        let mut below = Vec::new();
        let listed = list(root, root_fd, &job, enter, visit, local, &mut below);
        let Ok(mut q) = queue.lock() else { return };
        q.busy -= 1;
        match listed {
            Ok(()) => q.jobs.append(&mut below),
            Err(e) => {
                q.failure.get_or_insert(e);
            }
        }
        ready.notify_all();
    }
}

fn open_dir(at: BorrowedFd<'_>, path: &Path) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        at,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
}

/// Lists one folder: its files are visited, its folders handed back to be listed.
fn list<T>(
    root: &Path,
    root_fd: BorrowedFd<'_>,
    job: &Job,
    enter: &(dyn Fn(&str, bool) -> bool + Sync),
    visit: &Visit<'_, T>,
    local: &mut Vec<T>,
    below: &mut Vec<Job>,
) -> std::io::Result<()> {
    let opened = if job.rel.is_empty() {
        open_dir(root_fd, Path::new("."))
    } else {
        open_dir(root_fd, Path::new(&job.rel))
    };
    let fd = match opened {
        Ok(fd) => fd,
        Err(e) => {
            tracing::debug!("fingerprint: {}: {e}", job.rel);
            return Ok(());
        }
    };
    let mut entries: Vec<(CString, FileType)> = Vec::new();
    let mut dir = match rustix::fs::Dir::read_from(&fd) {
        Ok(d) => d,
        Err(e) => {
            tracing::debug!("fingerprint: {}: {e}", job.rel);
            return Ok(());
        }
    };
    while let Some(entry) = dir.read() {
        match entry {
            Ok(e) => {
                let name = e.file_name();
                if name != c"." && name != c".." {
                    entries.push((name.to_owned(), e.file_type()));
                }
            }
            Err(e) => {
                tracing::debug!("fingerprint: {}: {e}", job.rel);
                break;
            }
        }
    }
    let gitignore = entries.iter().any(|(n, _)| n.as_c_str() == c".gitignore");
    let git = entries
        .iter()
        .find(|(n, _)| n.as_c_str() == c".git")
        .map(|(_, kind)| *kind);
    let rules = if gitignore || git.is_some() {
        Some(Rules::below(
            job.rules.clone(),
            &root.join(&job.rel),
            &job.rel,
            gitignore,
            git,
        ))
    } else {
        job.rules.clone()
    };
    let mut files: Vec<(String, &CStr, FileType)> = Vec::new();
    for (name, kind) in &entries {
        let mut kind = *kind;
        let Some(text) = name.to_str().ok().filter(|n| *n != ".git") else {
            continue;
        };
        let mut rel = String::with_capacity(job.rel.len() + 1 + text.len());
        if !job.rel.is_empty() {
            rel.push_str(&job.rel);
            rel.push('/');
        }
        rel.push_str(text);
        if kind == FileType::Unknown {
            match rustix::fs::statx(&fd, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE) {
                Ok(s) => kind = FileType::from_raw_mode(u32::from(s.stx_mode)),
                Err(_) => continue, // gone since listed
            }
        }
        let is_dir = kind == FileType::Directory;
        if rules.as_deref().is_some_and(|r| r.ignored(&rel, is_dir)) || !enter(&rel, is_dir) {
            continue;
        }
        if is_dir {
            below.push(Job {
                rel,
                rules: rules.clone(),
            });
        } else {
            files.push((rel, name.as_c_str(), kind));
        }
    }
    // In name order, the order a fingerprint keeps them in.
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let name_at = if job.rel.is_empty() { 0 } else { job.rel.len() + 1 };
    let files: Vec<File<'_>> = files
        .iter()
        .map(|(rel, name, kind)| File {
            rel,
            name_at,
            dir: fd.as_fd(),
            name,
            kind: *kind,
        })
        .collect();
    visit(local, &job.rel, &files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    use crate::test_rng::Rng;

    const DIRS: &[&str] = &["a", "b", "build", "src", ".hidden", "node_modules"];
    const FILES: &[&str] = &["x.rs", "y.log", "z.txt", ".env", "keep.log", "build"];
    const RULES: &[&str] = &[
        "*.log", "!keep.log", "build/", "/src", "node_modules", "b/*.txt", "**/z.txt", "a/",
        "x.rs", "!x.rs", "/build", ".env", "*", "!*/", "# a comment", "[ab]/", "src/**/y.log",
    ];

    /// The reference: the `ignore` crate's own walker, as fingerprints were taken before.
    fn by_ignore_crate(root: &Path) -> BTreeSet<String> {
        let mut builder = ignore::WalkBuilder::new(root);
        builder
            .hidden(false)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .ignore(false)
            .parents(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git");
        builder
            .build()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_some_and(|t| !t.is_dir()))
            .filter_map(|e| {
                Some(e.path().strip_prefix(root).ok()?.to_str()?.to_owned())
            })
            .collect()
    }

    fn by_walk(root: &Path, threads: usize) -> std::io::Result<BTreeSet<String>> {
        let visit = |found: &mut Vec<String>, _: &str, files: &[File<'_>]| {
            found.extend(files.iter().map(|f| f.rel.to_owned()));
            Ok(())
        };
        Ok(walk(root, threads, &|_, _| true, &visit, &|_| {})?.into_iter().collect())
    }

    fn tree(rng: &mut Rng, root: &Path, depth: usize) -> std::io::Result<()> {
        std::fs::create_dir_all(root)?;
        for _ in 0..rng.below(4) {
            let f = root.join(rng.pick(FILES));
            if !f.is_dir() {
                std::fs::write(f, "x")?;
            }
        }
        if rng.below(3) == 0 {
            let rules: Vec<&str> = (0..1 + rng.below(3)).map(|_| rng.pick(RULES)).collect();
            std::fs::write(root.join(".gitignore"), rules.join("\n"))?;
        }
        if rng.below(6) == 0 {
            std::fs::create_dir_all(root.join(".git/info"))?;
            std::fs::write(root.join(".git/info/exclude"), rng.pick(RULES))?;
            std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n")?;
        }
        if rng.below(8) == 0 {
            let _ = std::os::unix::fs::symlink("a", root.join("link"));
        }
        if depth < 3 {
            for _ in 0..rng.below(3) {
                let d = root.join(rng.pick(DIRS));
                if !d.is_file() {
                    tree(rng, &d, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    #[test]
    fn the_walk_keeps_and_ignores_what_the_ignore_crates_walker_does() -> anyhow::Result<()> {
        for seed in 1..=300u64 {
            let dir = tempfile::tempdir()?;
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            tree(&mut rng, dir.path(), 0)?;
            let want = by_ignore_crate(dir.path());
            assert_eq!(by_walk(dir.path(), 1)?, want, "seed {seed}, one thread");
            assert_eq!(by_walk(dir.path(), 3)?, want, "seed {seed}, three threads");
        }
        Ok(())
    }

    #[test]
    fn a_file_is_looked_at_through_its_folder_and_a_missing_root_is_empty() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir(dir.path().join("d"))?;
        std::fs::write(dir.path().join("d/f"), "hello")?;
        std::os::unix::fs::symlink("f", dir.path().join("d/l"))?;
        let visit = |found: &mut Vec<(String, bool, u64, Option<Digest>)>,
                     folder: &str,
                     files: &[File<'_>]| {
            for f in files {
                assert_eq!((folder, f.name()), ("d", &f.rel[2..]));
                let hash = if f.is_file() { Some(f.hash()?) } else { None };
                found.push((f.rel.to_owned(), f.is_file(), f.stat()?.size, hash));
            }
            Ok(())
        };
        let mut found = walk(dir.path(), 2, &|_, _| true, &visit, &|_| {})?;
        found.sort();
        let hello = hash_reader(&b"hello"[..])?;
        assert_eq!(
            found,
            vec![
                ("d/f".to_owned(), true, 5, Some(hello)),
                ("d/l".to_owned(), false, 1, None)
            ]
        );
        let gone = walk(&dir.path().join("gone"), 2, &|_, _| true, &visit, &|_| {})?;
        assert!(gone.is_empty());
        // A visitor's error ends the walk and is what it returns.
        let failing = |_: &mut Vec<()>, _: &str, files: &[File<'_>]| match files {
            [] => Ok(()),
            _ => Err(std::io::Error::other("no")),
        };
        let err = walk(dir.path(), 2, &|_, _| true, &failing, &|_| {}).err();
        assert_eq!(err.map(|e| e.to_string()), Some("no".to_owned()));
        Ok(())
    }
}
