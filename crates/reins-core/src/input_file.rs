//! Files a person or a workspace hands Reins to read: a policy, a plan, an edit. Each is opened
//! without blocking (a FIFO cannot hang the harness), must be a regular file, and is read up to a
//! limit (`/dev/zero` cannot exhaust memory). A workspace's own files are opened without following
//! a link, since a repository can ship one pointing anywhere.

use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// The most Reins reads of a policy, a plan or an edit: far above any real one.
pub const MAX_INPUT_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("does not exist")]
    NotFound,
    #[error("is a {0}, not a regular file; Reins reads only regular files here")]
    NotRegular(&'static str),
    #[error("is a symbolic link; a workspace's own policy is read only from a regular file")]
    Link,
    #[error("is {size} bytes, over the {limit}-byte limit")]
    TooLarge { size: u64, limit: u64 },
    #[error("is not UTF-8 text")]
    NotText,
    #[error("cannot be read: {0}")]
    Io(std::io::Error),
}

/// How to open the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// The person's own file: a link (a dotfile manager's, say) is followed.
    Follow,
    /// A workspace's file: a link is refused.
    Refuse,
}

/// The text of `path`, read as described above.
pub fn read(path: &Path, links: Links) -> Result<String, InputError> {
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => InputError::NotFound,
            _ if e.raw_os_error() == Some(libc::ELOOP) => InputError::Link,
            _ => InputError::Io(e),
        })?;
    let meta = file.metadata().map_err(InputError::Io)?;
    let ft = meta.file_type();
    if !ft.is_file() {
        return Err(InputError::NotRegular(if ft.is_dir() {
            "directory"
        } else if ft.is_fifo() {
            "FIFO"
        } else if ft.is_char_device() || ft.is_block_device() {
            "device"
        } else if ft.is_socket() {
            "socket"
        } else {
            "special file"
        }));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(InputError::TooLarge {
            size: meta.len(),
            limit: MAX_INPUT_BYTES,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(InputError::Io)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(InputError::TooLarge {
            size: bytes.len() as u64,
            limit: MAX_INPUT_BYTES,
        });
    }
    String::from_utf8(bytes).map_err(|_| InputError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bounded_regular_files_are_read() -> anyhow::Result<()> {
        let tmp = tempfile::tempdir()?;
        let ok = tmp.path().join("policy.toml");
        std::fs::write(&ok, "[[rules]]\n")?;
        assert_eq!(read(&ok, Links::Refuse)?, "[[rules]]\n");
        let fifo = tmp.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )?;
        assert!(matches!(read(&fifo, Links::Follow), Err(InputError::NotRegular("FIFO"))));
        assert!(matches!(
            read(Path::new("/dev/zero"), Links::Follow),
            Err(InputError::NotRegular("device"))
        ));
        let link = tmp.path().join("link.toml");
        std::os::unix::fs::symlink(&ok, &link)?;
        assert!(matches!(read(&link, Links::Refuse), Err(InputError::Link)));
        assert_eq!(read(&link, Links::Follow)?, "[[rules]]\n");
        std::os::unix::fs::symlink("/dev/zero", tmp.path().join("zero"))?;
        assert!(read(&tmp.path().join("zero"), Links::Follow).is_err());
        let big = tmp.path().join("big");
        std::fs::File::create(&big)?.set_len(MAX_INPUT_BYTES + 1)?;
        assert!(matches!(read(&big, Links::Follow), Err(InputError::TooLarge { .. })));
        assert!(matches!(
            read(&tmp.path().join("absent"), Links::Follow),
            Err(InputError::NotFound)
        ));
        Ok(())
    }
}
