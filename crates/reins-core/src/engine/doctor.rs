//! The store's own check: the database, the blob store, every run's checkpoints, the audit chain.

use serde::Serialize;

use super::{stored, Engine};
use crate::digest::Digest;
use crate::error::Result;
use crate::store::{self, checkpoints, intents, runs, Store};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    pub healthy: bool,
    pub data_dir: String,
    pub database: String,
    pub schema_version: i64,
    pub supported_schema: i64,
    pub integrity: Vec<String>,
    pub blob_count: usize,
    pub blob_bytes: u64,
    pub corrupt_blobs: Vec<String>,
    pub missing_blobs: Vec<String>,
    pub leftover_temp_files: usize,
    pub runs: usize,
    pub damaged_checkpoints: Vec<String>,
    /// "ok", or the seq of the first event whose hash does not chain.
    pub audit_chain: String,
    /// Rows holding secrets sealed at rest.
    pub sealed_rows: i64,
    /// How this process hears of changes: "local" (an embedded database: its own commits, and
    /// other processes at their next poll), "listening" (a shared database, LISTEN/NOTIFY), or
    /// "polling" (a shared database it cannot listen on: other machines at the next poll).
    pub wake_ups: String,
    /// "ok" when there are none or this keyring's key opens them; otherwise why not.
    pub sealed: String,
    /// Whether commands run confined in full here, and how, in words.
    pub confined: bool,
    pub containment: String,
}

impl Engine {
    /// How this process hears of changes (see [`DoctorReport::wake_ups`]). A listener still
    /// connecting (the process has just started) is given two seconds.
    pub async fn wake_ups(&self) -> &'static str {
        use crate::store::wake::Listening;
        for _ in 0..40 {
            match self.store().listening() {
                Listening::Local => return "local",
                Listening::Up => return "listening",
                Listening::Down => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
        "polling"
    }

    /// Checks the database, the blob store, every run's checkpoints and the audit chain of the
    /// data dir at `data_dir`.
    pub async fn doctor(&self, data_dir: &std::path::Path) -> Result<DoctorReport> {
        let pool = self.store().pool();
        let blobs = self.blobs();
        let integrity = self.store().integrity_check().await?;
        let mut corrupt = Vec::new();
        let mut bytes = 0;
        let listed = blobs.files()?;
        for (digest, path) in &listed {
            match std::fs::read(path) {
                Ok(b) => {
                    bytes += b.len() as u64;
                    if &Digest::of(&b) != digest {
                        corrupt.push(digest.to_string());
                    }
                }
                Err(e) => corrupt.push(format!("{digest}: {e}")),
            }
        }
        let mut referenced: Vec<Digest> = Vec::new();
        // Pre-images are what rollback and recovery depend on; post-images are derived from the journal.
        referenced.extend(
            intents::all_pre_images(pool)
                .await?
                .into_iter()
                .filter_map(|i| i.sha256),
        );
        referenced.extend(
            checkpoints::blob_refs(pool)
                .await?
                .iter()
                .filter_map(|h| Digest::parse(h)),
        );
        referenced.sort();
        referenced.dedup();
        let mut missing = Vec::new();
        for digest in &referenced {
            if self.blob(digest).await?.is_none() {
                missing.push(digest.to_string());
            }
        }
        let (db_blobs, db_bytes, db_bad) = store::blobs::check(pool).await?;
        corrupt.extend(db_bad);
        let all_runs = runs::list(pool).await?;
        let mut damaged = Vec::new();
        for (r, _) in &all_runs {
            for i in stored::inspect(self.store(), blobs, r.id).await? {
                if let Err(e) = &i.payload {
                    damaged.push(format!("run {} checkpoint {}: {e}", r.id, i.seq));
                }
            }
        }
        let audit_chain = match crate::audit::verify::verify(self.store()).await?.damage {
            None => "ok".to_owned(),
            Some(d) => format!(
                "{}: {} (`reins audit verify` for details)",
                d.kind.as_str(),
                d.detail
            ),
        };
        let (sealed_rows, sample) = store::sealed::sample(pool).await?;
        let sealed = match sample {
            None => "ok".to_owned(),
            Some(text) => match self.reveal_text(&text).await {
                Ok(_) => "ok".to_owned(),
                Err(e) => e.to_string(),
            },
        };
        let schema_version = self.store().schema_version().await?;
        let supported_schema = Store::supported_schema();
        let healthy = integrity == ["ok"]
            && corrupt.is_empty()
            && missing.is_empty()
            && damaged.is_empty()
            && audit_chain == "ok"
            && sealed == "ok"
            && schema_version == supported_schema;
        let setup = self.contain.clone();
        let (confined, containment) = tokio::task::spawn_blocking(move || {
            let (confined, said) = setup.probe();
            (confined, format!("{said}; {}", setup.agents_network()))
        })
            .await
            .unwrap_or_else(|e| (false, format!("not checked: {e}")));
        Ok(DoctorReport {
            healthy,
            data_dir: data_dir.display().to_string(),
            database: self.store().path().display().to_string(),
            schema_version,
            supported_schema,
            integrity,
            blob_count: listed.len() + db_blobs,
            blob_bytes: bytes + db_bytes,
            corrupt_blobs: corrupt,
            missing_blobs: missing,
            leftover_temp_files: blobs.leftover_temps(),
            runs: all_runs.len(),
            damaged_checkpoints: damaged,
            audit_chain,
            sealed_rows,
            sealed,
            wake_ups: self.wake_ups().await.into(),
            confined,
            containment,
        })
    }
}
