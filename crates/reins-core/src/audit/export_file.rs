//! The export's file: written beside its target under a temporary name, hashed as it is written,
//! fsynced, then moved into place (and the folder fsynced), never over an existing file unless
//! asked. A crash leaves the complete file or none; a dead export's partial file is removed by the
//! next export to the same folder.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::export::{Manifest, CSV_COLUMNS};
use crate::event::ExportFormat;
use crate::error::{Error, Result};

/// The target path and the temporary file beside it.
pub(super) struct Target {
    out: PathBuf,
    pub(super) partial: PathBuf,
    overwrite: bool,
}

impl Target {
    pub(super) fn prepare(out: &Path, overwrite: bool) -> Result<Self> {
        let io = |context: String| move |source| Error::Io { context, source };
        let name = out
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::Invalid(format!("{}: not a file name", out.display())))?;
        let dir = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(Error::Invalid(format!(
                "{}: the folder does not exist",
                dir.display()
            )));
        }
        if out.is_dir() {
            return Err(Error::Invalid(format!(
                "{}: is a folder; give a file name",
                out.display()
            )));
        }
        if out.exists() && !overwrite {
            return Err(Error::Conflict(format!(
                "{}: already exists; choose another name or pass --force to replace it",
                out.display()
            )));
        }
        // Partial files of exports that died are removed (never one still being written).
        let prefix = format!(".{name}.reins-partial-");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let file = entry.file_name();
                let Some(pid) = file
                    .to_str()
                    .and_then(|f| f.strip_prefix(&prefix))
                    .and_then(|p| p.parse::<u32>().ok())
                else {
                    continue;
                };
                if pid != std::process::id() && crate::process::start_time(pid).is_none() {
                    std::fs::remove_file(entry.path())
                        .map_err(io(format!("removing {}", entry.path().display())))?;
                }
            }
        }
        let partial = dir.join(format!("{prefix}{}", std::process::id()));
        Ok(Self {
            out: out.to_owned(),
            partial,
            overwrite,
        })
    }

    /// Moves the finished file into place; without `overwrite`, never over an existing file.
    pub(super) fn persist(&self) -> Result<()> {
        let moved = if self.overwrite {
            std::fs::rename(&self.partial, &self.out)
        } else {
            // A hard link fails if the target appeared meanwhile; then the partial goes away.
            std::fs::hard_link(&self.partial, &self.out)
                .and_then(|()| std::fs::remove_file(&self.partial))
        };
        if let Err(source) = moved {
            let _ = std::fs::remove_file(&self.partial);
            return Err(if source.kind() == std::io::ErrorKind::AlreadyExists {
                Error::Conflict(format!(
                    "{}: appeared while exporting; nothing was replaced",
                    self.out.display()
                ))
            } else {
                Error::Io {
                    context: format!("moving the export into place at {}", self.out.display()),
                    source,
                }
            });
        }
        if let Some(dir) = self.partial.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|source| Error::Io {
                    context: format!("syncing {}", dir.display()),
                    source,
                })?;
        }
        Ok(())
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        // Gone already after a commit; after an error, the partial file must not stay.
        let _ = std::fs::remove_file(&self.partial);
    }
}

/// Writes lines, hashing every byte.
pub(super) struct Writer {
    file: BufWriter<Hashing<File>>,
    format: ExportFormat,
    path: PathBuf,
}

/// A writer that hashes what passes through it.
struct Hashing<W> {
    inner: W,
    sha: sha2::Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest as _;
        let n = self.inner.write(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl Writer {
    pub(super) fn new(path: &Path, format: ExportFormat) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|source| Error::Io {
                context: format!("creating {}", path.display()),
                source,
            })?;
        let mut w = Self {
            file: BufWriter::with_capacity(
                1 << 18,
                Hashing {
                    inner: file,
                    sha: sha2::Digest::new(),
                    bytes: 0,
                },
            ),
            format,
            path: path.to_owned(),
        };
        if format == ExportFormat::Csv {
            let mut header = csv::Writer::from_writer(Vec::new());
            header
                .write_record(CSV_COLUMNS)
                .map_err(|e| Error::Invalid(format!("CSV: {e}")))?;
            let bytes = header
                .into_inner()
                .map_err(|e| Error::Invalid(format!("CSV: {e}")))?;
            w.write_all(&bytes)?;
        }
        Ok(w)
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::Io {
            context: format!("writing {}", self.path.display()),
            source,
        }
    }

    pub(super) fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes).map_err(|e| self.io(e))
    }

    /// Adds the manifest (JSONL), flushes and fsyncs; returns the file's size and SHA-256.
    pub(super) fn finish(mut self, mut manifest: Manifest) -> Result<(u64, String)> {
        use sha2::Digest as _;
        self.file.flush().map_err(|e| self.io(e))?;
        if self.format == ExportFormat::Jsonl {
            manifest.sha256 = hex::encode(self.file.get_ref().sha.clone().finalize());
            let mut line = serde_json::to_vec(&serde_json::json!({ "manifest": manifest }))
                .map_err(|e| Error::Invalid(e.to_string()))?;
            line.push(b'\n');
            self.file.write_all(&line).map_err(|e| self.io(e))?;
            self.file.flush().map_err(|e| self.io(e))?;
        }
        let hashing = self.file.get_ref();
        let (bytes, sha) = (hashing.bytes, hex::encode(hashing.sha.clone().finalize()));
        hashing.inner.sync_all().map_err(|e| self.io(e))?;
        Ok((bytes, sha))
    }
}
