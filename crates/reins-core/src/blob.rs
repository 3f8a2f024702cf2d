//! Content-addressed blob store for what is too large to commit inside a transaction: pre-images
//! for rollback, large checkpoint payloads, large tool outputs kept as artifacts.
//!
//! Beside an embedded database it is files, `<root>/<aa>/<rest of sha256>`, written atomically
//! (temp + rename) and durably (the file and its directory are fsynced before `put` returns). On a
//! shared database it is the database's own `blobs` table, since the machines of a team share no
//! filesystem; `put` returns once the row is committed. Either way a row may point at the blob
//! once `put` has returned.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::digest::Digest;

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob {digest} is missing from {root}")]
    Missing { digest: Digest, root: PathBuf },
    #[error("blob {digest} is damaged: its bytes hash to {actual}")]
    Corrupt { digest: Digest, actual: Digest },
    #[error("blob store at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("blob store in the database: {0}")]
    Database(#[from] crate::store::StoreError),
}

#[derive(Clone, Debug)]
pub struct BlobStore {
    root: PathBuf,
    /// Team mode: blobs live in the shared database's `blobs` table, not under `root`.
    table: Option<crate::store::Pool>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BlobError + '_ {
    move |source| BlobError::Io {
        path: path.to_owned(),
        source,
    }
}

impl BlobStore {
    pub fn open(root: &Path) -> Result<Self, BlobError> {
        fs::create_dir_all(root.join("tmp")).map_err(io(root))?;
        Ok(Self {
            root: root.to_owned(),
            table: None,
        })
    }

    /// Blobs in the shared database's `blobs` table (team mode). `root` only names the place in
    /// messages; nothing is written there.
    pub fn in_database(pool: crate::store::Pool, shown_as: &Path) -> Self {
        Self {
            root: shown_as.to_owned(),
            table: Some(pool),
        }
    }

    pub async fn put(&self, bytes: &[u8]) -> Result<Digest, BlobError> {
        match &self.table {
            Some(pool) => {
                let digest = Digest::of(bytes);
                crate::store::blobs::put(pool, &digest, bytes, crate::clock::now_ms()).await?;
                Ok(digest)
            }
            None => self.put_file(bytes),
        }
    }

    /// Whether the blob is known to be kept. In team mode this is not asked (false): `put` there
    /// is cheap to repeat, so callers put again.
    pub fn has(&self, digest: &Digest) -> bool {
        self.table.is_none() && self.path_of(digest).exists()
    }

    /// Whether the blob is known to be gone (removed by retention since it was put, say). Never
    /// in team mode, where that is not asked.
    pub fn missing(&self, digest: &Digest) -> bool {
        self.table.is_none() && !self.path_of(digest).exists()
    }

    /// Keeps many blobs at once (a workspace's pre-images): each is written without its own
    /// fsync, and [`BlobStore::settle`] makes them all durable with one `syncfs`. A crash before
    /// that may lose some, which only a later undo can notice (it says the content is missing).
    pub async fn put_relaxed(&self, bytes: &[u8]) -> Result<Digest, BlobError> {
        match &self.table {
            Some(_) => self.put(bytes).await,
            None => self.write_file(bytes, false),
        }
    }

    /// Makes every blob written with [`BlobStore::put_relaxed`] durable.
    pub fn settle(&self) -> Result<(), BlobError> {
        if self.table.is_some() {
            return Ok(());
        }
        let dir = fs::File::open(&self.root).map_err(io(&self.root))?;
        rustix::fs::syncfs(&dir).map_err(|e| BlobError::Io {
            path: self.root.clone(),
            source: e.into(),
        })
    }

    /// Reads and verifies a blob.
    pub async fn get(&self, digest: &Digest) -> Result<Vec<u8>, BlobError> {
        let Some(pool) = &self.table else {
            return self.get_file(digest);
        };
        let bytes = crate::store::blobs::get(pool, digest)
            .await?
            .ok_or_else(|| BlobError::Missing {
                digest: digest.clone(),
                root: self.root.clone(),
            })?;
        verified(digest, bytes)
    }

    fn path_of(&self, digest: &Digest) -> PathBuf {
        let hex = digest.as_str();
        self.root.join(&hex[..2]).join(&hex[2..])
    }

    fn put_file(&self, bytes: &[u8]) -> Result<Digest, BlobError> {
        self.write_file(bytes, true)
    }

    fn write_file(&self, bytes: &[u8], durable: bool) -> Result<Digest, BlobError> {
        let digest = Digest::of(bytes);
        let target = self.path_of(&digest);
        if target.exists() {
            // Fresh again: retention leaves blobs younger than its grace period alone, and the
            // caller is about to commit something that refers to this one.
            if let Ok(f) = fs::File::options().write(true).open(&target) {
                let _ = f.set_modified(std::time::SystemTime::now());
            }
            return Ok(digest);
        }
        let dir = target.parent().unwrap_or(&self.root).to_owned();
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        let tmp =
            self.root
                .join("tmp")
                .join(format!("{}.{}", digest.as_str(), uuid::Uuid::now_v7()));
        let mut file = fs::File::create(&tmp).map_err(io(&tmp))?;
        file.write_all(bytes).map_err(io(&tmp))?;
        if durable {
            file.sync_all().map_err(io(&tmp))?;
        }
        drop(file);
        fs::rename(&tmp, &target).map_err(io(&target))?;
        if !durable {
            return Ok(digest);
        }
        fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&dir))?;
        Ok(digest)
    }

    fn get_file(&self, digest: &Digest) -> Result<Vec<u8>, BlobError> {
        let path = self.path_of(digest);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(BlobError::Missing {
                    digest: digest.clone(),
                    root: self.root.clone(),
                })
            }
            Err(e) => return Err(BlobError::Io { path, source: e }),
        };
        verified(digest, bytes)
    }

    /// Removes a blob file (absent is fine).
    pub fn remove(&self, digest: &Digest) -> Result<(), BlobError> {
        let path = self.path_of(digest);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(BlobError::Io { path, source: e }),
        }
    }

    /// Every blob file as (digest named by its path, path); files whose names are not digests are
    /// skipped. None in team mode: the table's blobs are the store's (`store::blobs`) to list.
    pub fn files(&self) -> Result<Vec<(Digest, PathBuf)>, BlobError> {
        let mut out = Vec::new();
        if self.table.is_some() {
            return Ok(out);
        }
        for shard in fs::read_dir(&self.root).map_err(io(&self.root))? {
            let shard = shard.map_err(io(&self.root))?;
            let name = shard.file_name().to_string_lossy().into_owned();
            if name.len() != 2 || !shard.path().is_dir() {
                continue;
            }
            for entry in fs::read_dir(shard.path()).map_err(io(&shard.path()))? {
                let entry = entry.map_err(io(&shard.path()))?;
                let full = format!("{name}{}", entry.file_name().to_string_lossy());
                if let Some(d) = Digest::parse(&full) {
                    out.push((d, entry.path()));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Leftover temp files from writes interrupted by a crash.
    pub fn leftover_temps(&self) -> usize {
        if self.table.is_some() {
            return 0;
        }
        fs::read_dir(self.root.join("tmp"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

fn verified(digest: &Digest, bytes: Vec<u8>) -> Result<Vec<u8>, BlobError> {
    let actual = Digest::of(&bytes);
    if &actual != digest {
        return Err(BlobError::Corrupt {
            digest: digest.clone(),
            actual,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn put_get_verifies_and_dedups() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = BlobStore::open(dir.path())?;
        let a = store.put(b"hello").await?;
        let b = store.put(b"hello").await?;
        assert_eq!(a, b);
        assert_eq!(store.get(&a).await?, b"hello");
        assert_eq!(store.files()?.len(), 1, "same bytes are stored once");
        fs::write(store.path_of(&a), b"hellO")?;
        assert!(
            matches!(store.get(&a).await, Err(BlobError::Corrupt { .. })),
            "a damaged blob must not be served"
        );
        let missing = Digest::of(b"nope");
        assert!(matches!(
            store.get(&missing).await,
            Err(BlobError::Missing { .. })
        ));
        Ok(())
    }

    #[tokio::test]
    async fn relaxed_puts_are_settled_at_once_and_a_removed_blob_is_missing() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = BlobStore::open(dir.path())?;
        let d = store.put_relaxed(b"pre-image").await?;
        store.settle()?;
        assert!(store.has(&d) && !store.missing(&d));
        assert_eq!(store.get(&d).await?, b"pre-image");
        store.remove(&d)?;
        assert!(store.missing(&d) && !store.has(&d));
        Ok(())
    }
}
