//! Held directories: the directory an effect acts in, opened from the root one component at a time
//! with `O_NOFOLLOW`, and kept open while the effect runs. Every later operation is relative to that
//! handle, so nothing swapped in after the check (a directory replaced by a link, a link flipped back
//! and forth) can move the effect somewhere else. The last component is opened the same way.

use std::os::fd::OwnedFd;

use cap_std::fs::Dir;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::{JailError, RelPath, Result};

/// Opens one name in `dir` without following it. `name` is a single normal component.
pub(super) fn open_beneath(dir: &Dir, name: &str, flags: OFlags) -> std::io::Result<OwnedFd> {
    debug_assert!(!name.contains('/') && name != ".." && !name.is_empty());
    rustix::fs::openat(
        dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(std::io::Error::from)
}

/// The directory holding `rel` (the root for a top-level name), walked without following links.
/// `None` when a directory on the way does not exist and `create` is false. A link anywhere on
/// the way is refused: Reins does not write, delete or move through links.
pub(super) fn parent_of(root: &Dir, rel: &RelPath, create: bool) -> Result<Option<Dir>> {
    let mut dir = root.try_clone().map_err(|e| JailError::io(rel, e))?;
    let mut walked = RelPath::root();
    for name in rel.parent().components() {
        walked = walked.join(name);
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let fd = match open_beneath(&dir, name, flags) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => {
                if !create {
                    return Ok(None);
                }
                match dir.create_dir(name) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(JailError::io(&walked, e)),
                }
                open_beneath(&dir, name, flags).map_err(|e| refusal(&dir, name, &walked, e))?
            }
            Err(e) => return Err(refusal(&dir, name, &walked, e)),
        };
        dir = Dir::from_std_file(std::fs::File::from(fd));
    }
    Ok(Some(dir))
}

/// A held directory's identity, `dev:ino`.
pub(super) fn identity(dir: &Dir) -> std::io::Result<String> {
    use cap_std::fs::MetadataExt as _;
    let m = dir.dir_metadata()?;
    Ok(format!("{}:{}", m.dev(), m.ino()))
}

/// Why `name` could not be opened as a directory. `ELOOP` and `ENOTDIR` under `O_NOFOLLOW` mean
/// it was a link (or not a directory) at that instant, whatever it is by the time we look again.
fn refusal(dir: &Dir, name: &str, path: &RelPath, e: std::io::Error) -> JailError {
    let link_or_file = matches!(
        e.raw_os_error(),
        Some(code) if code == Errno::LOOP.raw_os_error() || code == Errno::NOTDIR.raw_os_error()
    );
    match dir.symlink_metadata(name) {
        Ok(m) if !m.is_dir() && !m.file_type().is_symlink() => JailError::NotRegular {
            path: path.clone(),
            kind: super::kind_of(&m.file_type()),
        },
        Ok(m) if m.file_type().is_symlink() => JailError::Link { path: path.clone() },
        _ if link_or_file => JailError::Link { path: path.clone() },
        _ => JailError::io(path, e),
    }
}

/// Flushes a held directory's entries to disk. (The root's handle may be `O_PATH`, which cannot be
/// fsynced, so the directory is opened again through itself.)
pub(super) fn sync(dir: &Dir, path: &RelPath) -> Result<()> {
    rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .and_then(|fd| rustix::fs::fsync(&fd))
    .map_err(|e| JailError::io(path, e.into()))
}

/// Renames `from` (in its held directory) to `to` (in its), never replacing what is at `to`.
pub(super) fn rename_new(source: &Dir, from: &RelPath, target: &Dir, to: &RelPath) -> Result<()> {
    use rustix::fs::RenameFlags;
    match rustix::fs::renameat_with(
        source,
        from.file_name(),
        target,
        to.file_name(),
        RenameFlags::NOREPLACE,
    ) {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => Err(JailError::Exists { path: to.clone() }),
        // A filesystem without RENAME_NOREPLACE: the target was checked absent just before.
        Err(Errno::INVAL | Errno::NOSYS) => source
            .rename(from.file_name(), target, to.file_name())
            .map_err(|e| JailError::io(from, e)),
        Err(e) => Err(JailError::io(from, e.into())),
    }
}
