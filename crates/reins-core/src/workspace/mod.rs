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
mod path;
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
    #[error("{path}: no such file or directory")]
    NotFound { path: RelPath },
    #[error("{path}: already exists")]
    Exists { path: RelPath },
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

    /// Reads a file for the agent: regular, not hard-linked, at most `limit` bytes.
    pub fn read(&self, rel: &RelPath, limit: u64) -> Result<Vec<u8>> {
        let meta = self
            .dir
            .metadata(rel.as_os())
            .map_err(|e| JailError::io(rel, e))?;
        if !meta.is_file() {
            return Err(JailError::NotRegular {
                path: rel.clone(),
                kind: kind_of(&meta.file_type()),
            });
        }
        if meta.nlink() > 1 {
            return Err(JailError::HardLinked {
                path: rel.clone(),
                links: meta.nlink(),
            });
        }
        self.read_regular(rel, limit)
    }

    fn read_regular(&self, rel: &RelPath, limit: u64) -> Result<Vec<u8>> {
        let mut options = OpenOptions::new();
        options.read(true).custom_flags(libc::O_NONBLOCK);
        let file = self
            .dir
            .open_with(rel.as_os(), &options)
            .map_err(|e| JailError::io(rel, e))?;
        let meta = file.metadata().map_err(|e| JailError::io(rel, e))?;
        if !meta.is_file() {
            return Err(JailError::NotRegular {
                path: rel.clone(),
                kind: kind_of(&meta.file_type()),
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

    /// The current bytes of a path an effect is about to change: None when absent. Links and
    /// non-regular files are refused (Reins never writes through them). Hard links are fine here: the
    /// write replaces the name, never the shared inode.
    pub fn image(&self, rel: &RelPath) -> Result<Option<Vec<u8>>> {
        if rel.is_root() {
            return Err(JailError::Root {
                what: "written, deleted or moved",
            });
        }
        match self.dir.symlink_metadata(rel.as_os()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(JailError::io(rel, e)),
            Ok(m) if m.file_type().is_symlink() => Err(JailError::Link { path: rel.clone() }),
            Ok(m) if !m.is_file() => Err(JailError::NotRegular {
                path: rel.clone(),
                kind: kind_of(&m.file_type()),
            }),
            Ok(_) => self.read_regular(rel, MAX_IMAGE_BYTES).map(Some),
        }
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
        let m = self.dir.symlink_metadata(rel.as_os()).ok()?;
        m.is_file().then(|| m.mode() & 0o7777)
    }

    /// Atomically replaces (or creates) a file: temp file beside it, fsync, rename, fsync directory.
    /// A replaced file keeps its permission bits (an executable stays executable, and nothing
    /// becomes executable that was not reviewed as such).
    pub fn write(&self, rel: &RelPath, bytes: &[u8]) -> Result<()> {
        self.image_kind_allows_write(rel)?;
        let keep_mode = self.mode(rel);
        let parent = rel.parent();
        if !parent.is_root() {
            self.dir
                .create_dir_all(parent.as_os())
                .map_err(|e| JailError::io(&parent, e))?;
        }
        let tmp = parent.join(&format!(
            ".{}.reins-tmp-{}",
            rel.file_name(),
            uuid::Uuid::now_v7().simple()
        ));
        let result = (|| {
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            let mut file = self.dir.open_with(tmp.as_os(), &options)?;
            file.write_all(bytes)?;
            if let Some(mode) = keep_mode {
                use cap_std::fs::PermissionsExt as _;
                file.set_permissions(cap_std::fs::Permissions::from_mode(mode))?;
            }
            file.sync_all()?;
            drop(file);
            crate::fault_point!("during_effect");
            self.dir.rename(tmp.as_os(), &self.dir, rel.as_os())
        })();
        if let Err(e) = result {
            let _ = self.dir.remove_file(tmp.as_os());
            return Err(JailError::io(rel, e));
        }
        self.sync_dir(&parent)
    }

    /// Removes temp files a crashed write of `rel` left beside it (`.NAME.reins-tmp-*`). Returns
    /// how many were removed.
    pub fn remove_leftover_temps(&self, rel: &RelPath) -> usize {
        let parent = rel.parent();
        let prefix = format!(".{}.reins-tmp-", rel.file_name());
        let Ok(entries) = self.dir.read_dir(parent.as_os()) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with(&prefix) {
                let tmp = parent.join(&name.to_string_lossy());
                if self.dir.remove_file(tmp.as_os()).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }

    fn image_kind_allows_write(&self, rel: &RelPath) -> Result<()> {
        if rel.is_root() {
            return Err(JailError::Root {
                what: "written, deleted or moved",
            });
        }
        match self.dir.symlink_metadata(rel.as_os()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(JailError::io(rel, e)),
            Ok(m) if m.file_type().is_symlink() => Err(JailError::Link { path: rel.clone() }),
            Ok(m) if !m.is_file() => Err(JailError::NotRegular {
                path: rel.clone(),
                kind: kind_of(&m.file_type()),
            }),
            Ok(_) => Ok(()),
        }
    }

    /// Removes one regular file.
    pub fn remove(&self, rel: &RelPath) -> Result<()> {
        self.image_kind_allows_write(rel)?;
        self.dir
            .remove_file(rel.as_os())
            .map_err(|e| JailError::io(rel, e))?;
        self.sync_dir(&rel.parent())
    }

    /// Moves one regular file to a path that does not exist yet.
    pub fn rename(&self, from: &RelPath, to: &RelPath) -> Result<()> {
        self.image_kind_allows_write(from)?;
        if self.dir.symlink_metadata(to.as_os()).is_ok() {
            return Err(JailError::Exists { path: to.clone() });
        }
        self.image_kind_allows_write(to)?;
        let parent = to.parent();
        if !parent.is_root() {
            self.dir
                .create_dir_all(parent.as_os())
                .map_err(|e| JailError::io(&parent, e))?;
        }
        self.dir
            .rename(from.as_os(), &self.dir, to.as_os())
            .map_err(|e| JailError::io(from, e))?;
        self.sync_dir(&from.parent())?;
        self.sync_dir(&parent)
    }

    fn sync_dir(&self, rel: &RelPath) -> Result<()> {
        // A directory handle from open_dir may be O_PATH, which cannot be fsynced: open it for reading.
        let mut options = OpenOptions::new();
        options.read(true).custom_flags(libc::O_DIRECTORY);
        self.dir
            .open_with(rel.as_os(), &options)
            .and_then(|d| d.sync_all())
            .map_err(|e| JailError::io(rel, e))
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
