//! The workspace jail. Every file tool goes through here: paths resolve beneath the canonical root by
//! component; links never lead outside; writes are atomic and never go through a link.
//!
//! Two layers: a readable pre-check (lexical rules, then each existing prefix that is a symlink is
//! resolved and compared with the root component-wise) that produces clear errors for the agent, and
//! cap-std's `Dir`, which resolves every operation beneath the root's directory handle and refuses
//! escapes even if the tree changes between the check and the operation.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt as _, OpenOptions, OpenOptionsExt as _};
use serde::Serialize;

use crate::digest::Digest;

pub mod diff;
pub mod fingerprint;
mod held;
mod path;
pub mod refresh;
mod walk;
pub mod watcher;
pub use path::RelPath;

#[cfg(test)]
mod tests;

/// Largest file the harness reads to take a pre-image (kept so rollback can restore it) or compute a
/// hash. Larger files cannot be changed by file tools: the agent is told so.
pub const MAX_IMAGE_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum JailError {
    #[error("path {path:?} {why}")]
    Invalid { path: String, why: &'static str },
    #[error("{path}: is a symbolic link to {target}, which is outside the workspace")]
    Escapes { path: RelPath, target: PathBuf },
    #[error("{path}: is a symbolic link; Reins does not write, delete or move through links")]
    Link { path: RelPath },
    #[error("{path}: is a dangling symbolic link")]
    Dangling { path: RelPath },
    #[error("{path}: is a {kind}, not a regular file")]
    NotRegular { path: RelPath, kind: &'static str },
    #[error("{path}: has {links} hard links and may be the same file as one outside the workspace; refusing to read it")]
    HardLinked { path: RelPath, links: u64 },
    #[error("{path}: is {size} bytes, over the {limit}-byte limit")]
    TooLarge {
        path: RelPath,
        size: u64,
        limit: u64,
    },
    #[error("{path}: refused: it leads to {real}, and {why}")]
    Guarded {
        path: RelPath,
        real: RelPath,
        why: String,
    },
    #[error("{path}: no such file or directory")]
    NotFound { path: RelPath },
    #[error("{path}: already exists")]
    Exists { path: RelPath },
    /// The folder an effect acts in is not the one its check saw (F1): another directory was
    /// renamed into its place.
    #[error("{path}: the folder was replaced after the check (device and inode {found}, checked {expected}); nothing was changed")]
    Replaced {
        path: RelPath,
        expected: String,
        found: String,
    },
    #[error("the workspace root itself cannot be {what}")]
    Root { what: &'static str },
    #[error("{path}: refused: {source}")]
    Io {
        path: RelPath,
        source: std::io::Error,
    },
    #[error("workspace {root}: {why}")]
    Workspace { root: PathBuf, why: String },
}

impl JailError {
    /// Whether this refusal comes from a check made before anything on disk was changed.
    pub fn refused_before_acting(&self) -> bool {
        matches!(
            self,
            JailError::Invalid { .. }
                | JailError::Escapes { .. }
                | JailError::Link { .. }
                | JailError::Dangling { .. }
                | JailError::NotRegular { .. }
                | JailError::Exists { .. }
                | JailError::Replaced { .. }
                | JailError::Root { .. }
                | JailError::Guarded { .. }
        )
    }

    fn io(path: &RelPath, source: std::io::Error) -> Self {
        match source.kind() {
            std::io::ErrorKind::NotFound => JailError::NotFound { path: path.clone() },
            _ => JailError::Io {
                path: path.clone(),
                source,
            },
        }
    }
}

type Result<T, E = JailError> = std::result::Result<T, E>;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub path: RelPath,
    pub kind: &'static str,
    pub size: u64,
}

pub struct Workspace {
    root: PathBuf,
    dir: Dir,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .finish()
    }
}

fn kind_of(ft: &cap_std::fs::FileType) -> &'static str {
    use cap_std::fs::FileTypeExt as _;
    if ft.is_dir() {
        "directory"
    } else if ft.is_file() {
        "file"
    } else if ft.is_symlink() {
        "symbolic link"
    } else if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

impl Workspace {
    pub fn open(root: &Path) -> Result<Self> {
        let bad = |why: String| JailError::Workspace {
            root: root.to_owned(),
            why,
        };
        let canonical = std::fs::canonicalize(root).map_err(|e| bad(e.to_string()))?;
        if !canonical.is_dir() {
            return Err(bad("is not a directory".into()));
        }
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority())
            .map_err(|e| bad(e.to_string()))?;
        Ok(Self {
            root: canonical,
            dir,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Lexical check plus the symlink pre-check: the path the agent gave, made safe to use.
    pub fn resolve(&self, raw: &str) -> Result<RelPath> {
        let rel = RelPath::parse(raw)?;
        self.check_links(&rel)?;
        Ok(rel)
    }

    /// Every existing prefix that is a symlink must resolve, component-wise, beneath the root.
    fn check_links(&self, rel: &RelPath) -> Result<()> {
        for prefix in rel.prefixes() {
            let on_disk = self.root.join(prefix.as_os());
            match std::fs::symlink_metadata(&on_disk) {
                Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(&on_disk) {
                    Ok(target) if target.starts_with(&self.root) => {}
                    Ok(target) => {
                        return Err(JailError::Escapes {
                            path: prefix,
                            target,
                        })
                    }
                    Err(_) => {
                        let target = std::fs::read_link(&on_disk).unwrap_or_default();
                        let absolute = if target.is_absolute() {
                            target
                        } else {
                            on_disk.parent().unwrap_or(&self.root).join(target)
                        };
                        if !lexically_inside(&absolute, &self.root) {
                            return Err(JailError::Escapes {
                                path: prefix,
                                target: absolute,
                            });
                        }
                        return Err(JailError::Dangling { path: prefix });
                    }
                },
                Ok(_) => {}
                Err(_) => return Ok(()), // nothing further exists
            }
        }
        Ok(())
    }

    /// Reads a file for the agent: regular, not hard-linked, at most `limit` bytes. Links inside
    /// the workspace are followed; `guard` is then asked about the file actually opened (its real
    /// path, read from the open handle), and a refusal from it is final. So a link flipped after
    /// the check cannot hand over a file the check did not see.
    pub fn read(
        &self,
        rel: &RelPath,
        limit: u64,
        guard: &dyn Fn(&RelPath) -> Option<String>,
    ) -> Result<Vec<u8>> {
        let mut options = OpenOptions::new();
        options.read(true).custom_flags(libc::O_NONBLOCK);
        let file = self
            .dir
            .open_with(rel.as_os(), &options)
            .map_err(|e| JailError::io(rel, e))?;
        let real = self.real_path(rel, &file)?;
        if let Some(why) = guard(&real) {
            return Err(JailError::Guarded {
                path: rel.clone(),
                real,
                why,
            });
        }
        read_open(rel, file, limit, true)
    }

    /// Where an open handle really is, relative to the root (from `/proc/self/fd`).
    fn real_path(&self, rel: &RelPath, file: &cap_std::fs::File) -> Result<RelPath> {
        use std::os::fd::AsRawFd as _;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|e| JailError::io(rel, e))?;
        let inside = real.strip_prefix(&self.root).map_err(|_| JailError::Escapes {
            path: rel.clone(),
            target: real.clone(),
        })?;
        RelPath::parse(&inside.to_string_lossy())
    }

    /// The current bytes of a path an effect is about to change: None when absent. Links anywhere
    /// on the path and non-regular files are refused (Reins never writes through them). Hard links
    /// are fine here: the write replaces the name, never the shared inode.
    pub fn image(&self, rel: &RelPath) -> Result<Option<Vec<u8>>> {
        let Some(parent) = self.held_parent(rel, false)? else {
            return Ok(None);
        };
        if !self.kind_allows_write(&parent, rel)? {
            return Ok(None);
        }
        let fd = held::open_beneath(
            &parent,
            rel.file_name(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK,
        )
        .map_err(|e| JailError::io(rel, e))?;
        let file = cap_std::fs::File::from_std(std::fs::File::from(fd));
        read_open(rel, file, MAX_IMAGE_BYTES, false).map(Some)
    }

    /// The sha256 of each path now (None: absent). A path that cannot be imaged is an error.
    pub fn hashes<'a>(
        &self,
        paths: impl IntoIterator<Item = &'a RelPath>,
    ) -> Result<BTreeMap<String, Option<Digest>>> {
        paths
            .into_iter()
            .map(|p| {
                Ok((
                    p.as_str().to_owned(),
                    self.image(p)?.map(|b| Digest::of(&b)),
                ))
            })
            .collect()
    }

    /// The permission bits of an existing regular file (None: absent or not a regular file).
    pub fn mode(&self, rel: &RelPath) -> Option<u32> {
        let parent = self.held_parent(rel, false).ok()??;
        let m = parent.symlink_metadata(rel.file_name()).ok()?;
        m.is_file().then(|| m.mode() & 0o7777)
    }

    /// The directory holding `rel`, walked without following links and kept open (see `held`).
    fn held_parent(&self, rel: &RelPath, create: bool) -> Result<Option<Dir>> {
        if rel.is_root() {
            return Err(JailError::Root {
                what: "written, deleted or moved",
            });
        }
        held::parent_of(&self.dir, rel, create)
    }

    /// [`Self::held_parent`], refused unless the folder is the one `expect` names (`dev:ino`, as
    /// [`Self::folder_id`] gave it when the effect was checked). Walked without links, the same
    /// inode at the same path is the same folder in the same place.
    fn held_parent_bound(
        &self,
        rel: &RelPath,
        create: bool,
        expect: Option<&str>,
    ) -> Result<Option<Dir>> {
        let dir = self.held_parent(rel, create)?;
        if let (Some(d), Some(expected)) = (&dir, expect) {
            let found = held::identity(d).map_err(|e| JailError::io(&rel.parent(), e))?;
            if found != expected {
                return Err(JailError::Replaced {
                    path: rel.parent(),
                    expected: expected.to_owned(),
                    found,
                });
            }
        }
        Ok(dir)
    }

    /// The identity (`dev:ino`) of the folder holding `rel`, walked without links; None when it
    /// does not exist yet. A review and the effect it approved are bound to it.
    pub fn folder_id(&self, rel: &RelPath) -> Result<Option<String>> {
        match self.held_parent(rel, false)? {
            Some(d) => held::identity(&d)
                .map(Some)
                .map_err(|e| JailError::io(&rel.parent(), e)),
            None => Ok(None),
        }
    }

    /// Whether `rel`'s name in its held directory exists as a regular file (false: absent); a
    /// link or anything else is refused.
    fn kind_allows_write(&self, parent: &Dir, rel: &RelPath) -> Result<bool> {
        match parent.symlink_metadata(rel.file_name()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(JailError::io(rel, e)),
            Ok(m) if m.file_type().is_symlink() => Err(JailError::Link { path: rel.clone() }),
            Ok(m) if !m.is_file() => Err(JailError::NotRegular {
                path: rel.clone(),
                kind: kind_of(&m.file_type()),
            }),
            Ok(_) => Ok(true),
        }
    }

    /// Atomically replaces (or creates) a file: temp file beside it, fsync, rename, fsync directory,
    /// all inside the held parent directory. A replaced file keeps its permission bits (an
    /// executable stays executable, and nothing becomes executable that was not reviewed as such).
    pub fn write(&self, rel: &RelPath, bytes: &[u8]) -> Result<()> {
        self.write_in(rel, bytes, None)
    }

    /// [`Self::write`] in the folder `folder` names (`dev:ino`), when given.
    pub fn write_in(&self, rel: &RelPath, bytes: &[u8], folder: Option<&str>) -> Result<()> {
        self.write_mode_in(rel, bytes, folder, None)
    }

    /// [`Self::write_in`] with the file's permission bits set to `mode` (a staged command's
    /// result says them); None keeps an existing file's.
    pub fn write_mode_in(
        &self,
        rel: &RelPath,
        bytes: &[u8],
        folder: Option<&str>,
        mode: Option<u32>,
    ) -> Result<()> {
        let parent = self
            .held_parent_bound(rel, true, folder)?
            .ok_or_else(|| JailError::NotFound { path: rel.parent() })?;
        let name = rel.file_name();
        let existing = if self.kind_allows_write(&parent, rel)? {
            parent
                .symlink_metadata(name)
                .ok()
                .map(|m| m.mode() & 0o7777)
        } else {
            None
        };
        // No set-id bits from a command's layer: only the permission bits land.
        let keep_mode = mode.map(|m| m & 0o777).or(existing);
        let tmp = format!(".{name}.reins-tmp-{}", uuid::Uuid::now_v7().simple());
        let result = (|| {
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            let mut file = parent.open_with(&tmp, &options)?;
            file.write_all(bytes)?;
            if let Some(mode) = keep_mode {
                use cap_std::fs::PermissionsExt as _;
                file.set_permissions(cap_std::fs::Permissions::from_mode(mode))?;
            }
            file.sync_all()?;
            drop(file);
            crate::fault_point!("during_effect");
            parent.rename(&tmp, &parent, name)
        })();
        if let Err(e) = result {
            let _ = parent.remove_file(&tmp);
            return Err(JailError::io(rel, e));
        }
        held::sync(&parent, &rel.parent())
    }

    /// Removes temp files a crashed write of `rel` left beside it (`.NAME.reins-tmp-*`). Returns
    /// how many were removed.
    pub fn remove_leftover_temps(&self, rel: &RelPath) -> usize {
        let prefix = format!(".{}.reins-tmp-", rel.file_name());
        let Ok(Some(parent)) = self.held_parent(rel, false) else {
            return 0;
        };
        let Ok(entries) = parent.entries() else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with(&prefix) && parent.remove_file(&name).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// Removes one regular file.
    pub fn remove(&self, rel: &RelPath) -> Result<()> {
        self.remove_in(rel, None)
    }

    /// [`Self::remove`] in the folder `folder` names, when given.
    pub fn remove_in(&self, rel: &RelPath, folder: Option<&str>) -> Result<()> {
        let parent = self
            .held_parent_bound(rel, false, folder)?
            .ok_or_else(|| JailError::NotFound { path: rel.clone() })?;
        if !self.kind_allows_write(&parent, rel)? {
            return Err(JailError::NotFound { path: rel.clone() });
        }
        parent
            .remove_file(rel.file_name())
            .map_err(|e| JailError::io(rel, e))?;
        held::sync(&parent, &rel.parent())
    }

    /// Moves one regular file to a path that does not exist yet. Both directories are held, and
    /// the rename refuses to replace anything that appears at the target meanwhile.
    pub fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()> {
        self.rename_in(from, to, (None, None))
    }

    /// [`Self::rename`] between the folders `folders` name (source, target), when given.
    pub fn rename_in(
        &self,
        from: &RelPath,
        to: &RelPath,
        folders: (Option<&str>, Option<&str>),
    ) -> Result<()> {
        let source = self
            .held_parent_bound(from, false, folders.0)?
            .ok_or_else(|| JailError::NotFound { path: from.clone() })?;
        if !self.kind_allows_write(&source, from)? {
            return Err(JailError::NotFound { path: from.clone() });
        }
        let target = self
            .held_parent_bound(to, true, folders.1)?
            .ok_or_else(|| JailError::NotFound { path: to.parent() })?;
        if target.symlink_metadata(to.file_name()).is_ok() {
            return Err(JailError::Exists { path: to.clone() });
        }
        held::rename_new(&source, from, &target, to)?;
        held::sync(&source, &from.parent())?;
        held::sync(&target, &to.parent())
    }

    /// Lists a directory (or a whole tree). Never descends into links; at most `limit` entries.
    /// Returns the entries and whether the listing was cut.
    pub fn list(&self, rel: &RelPath, recursive: bool, limit: usize) -> Result<(Vec<Entry>, bool)> {
        let meta = self
            .dir
            .metadata(rel.as_os())
            .map_err(|e| JailError::io(rel, e))?;
        if !meta.is_dir() {
            return Err(JailError::NotRegular {
                path: rel.clone(),
                kind: kind_of(&meta.file_type()),
            });
        }
        let mut out = Vec::new();
        let mut pending = vec![rel.clone()];
        while let Some(dir) = pending.pop() {
            let mut children = Vec::new();
            for entry in self
                .dir
                .read_dir(dir.as_os())
                .map_err(|e| JailError::io(&dir, e))?
            {
                let entry = entry.map_err(|e| JailError::io(&dir, e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let ft = entry.file_type().map_err(|e| JailError::io(&dir, e))?;
                let size = if ft.is_file() {
                    entry.metadata().map(|m| m.len()).unwrap_or(0)
                } else {
                    0
                };
                children.push(Entry {
                    path: dir.join(&name),
                    kind: kind_of(&ft),
                    size,
                });
            }
            children.sort_by(|a, b| a.path.cmp(&b.path));
            for child in children {
                if out.len() >= limit {
                    return Ok((out, true));
                }
                if recursive && child.kind == "directory" {
                    pending.push(child.path.clone());
                }
                out.push(child);
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok((out, false))
    }
}

/// Reads an open file: it must be regular (and, for the agent's reads, not hard-linked) and at
/// most `limit` bytes.
fn read_open(
    rel: &RelPath,
    file: cap_std::fs::File,
    limit: u64,
    single_link: bool,
) -> Result<Vec<u8>> {
    let meta = file.metadata().map_err(|e| JailError::io(rel, e))?;
    if !meta.is_file() {
        return Err(JailError::NotRegular {
            path: rel.clone(),
            kind: kind_of(&meta.file_type()),
        });
    }
    if single_link && meta.nlink() > 1 {
        return Err(JailError::HardLinked {
            path: rel.clone(),
            links: meta.nlink(),
        });
    }
    if meta.len() > limit {
        return Err(JailError::TooLarge {
            path: rel.clone(),
            size: meta.len(),
            limit,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| JailError::io(rel, e))?;
    if bytes.len() as u64 > limit {
        return Err(JailError::TooLarge {
            path: rel.clone(),
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

fn lexically_inside(path: &Path, root: &Path) -> bool {
    let mut parts: Vec<std::path::Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            other => parts.push(other),
        }
    }
    parts.iter().collect::<PathBuf>().starts_with(root)
}
