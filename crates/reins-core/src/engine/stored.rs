//! Reading a run's stored checkpoints back, verifying each one.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::checkpoint::{
    decode, recovery_point_after, recovery_point_past, Checkpoint, Health, Level,
    RecoveryAnalysis,
};
use crate::blob::BlobStore;
use crate::digest::Digest;
use crate::ids::RunId;
use crate::store::{checkpoints, Result, Store};

/// One stored checkpoint with the outcome of verifying it.
#[derive(Clone, Debug)]
pub struct Inspected {
    pub seq: i64,
    pub level: Level,
    pub size: i64,
    pub sha256: String,
    pub in_blob: bool,
    pub created_at: i64,
    pub payload: Result<Checkpoint, String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CheckpointSummary {
    pub seq: i64,
    pub level: Level,
    pub size: i64,
    pub sha256: String,
    pub in_blob: bool,
    pub created_at: i64,
    /// "ok" or what is wrong with it.
    pub status: String,
}

impl Inspected {
    pub fn summary(&self) -> CheckpointSummary {
        CheckpointSummary {
            seq: self.seq,
            level: self.level,
            size: self.size,
            sha256: self.sha256.clone(),
            in_blob: self.in_blob,
            created_at: self.created_at,
            status: match &self.payload {
                Ok(_) => "ok".into(),
                Err(e) => e.clone(),
            },
        }
    }
}

/// A stored checkpoint's payload, from its row or the blob store, checksum-verified and decoded;
/// or what is wrong with it.
async fn payload_of(
    row: &checkpoints::CheckpointRow,
    blobs: &BlobStore,
) -> Result<Checkpoint, String> {
    let bytes = match (&row.payload, &row.blob) {
        (Some(bytes), _) => Ok(bytes.clone()),
        (None, Some(hash)) => match Digest::parse(hash) {
            Some(d) => blobs.get(&d).await.map_err(|e| e.to_string()),
            None => Err(format!("blob reference {hash:?} is not a digest")),
        },
        (None, None) => Err("no payload".to_owned()),
    };
    bytes.and_then(|b| {
        decode(row.seq, row.schema_version, &b, &row.sha256)
            .map(|p| p.into_current())
            .map_err(|e| e.to_string())
    })
}

/// Loads and verifies every checkpoint of a run, oldest first.
pub async fn inspect(store: &Store, blobs: &BlobStore, run: RunId) -> Result<Vec<Inspected>> {
    let rows = checkpoints::list(store.pool(), run).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let payload = payload_of(&row, blobs).await;
        out.push(Inspected {
            seq: row.seq,
            level: row.level,
            size: row.size,
            sha256: row.sha256,
            in_blob: row.blob.is_some(),
            created_at: row.created_at,
            payload,
        });
    }
    Ok(out)
}

/// Verifies every checkpoint of a run by checksum (and schema version) without decoding any:
/// enough to pick the recovery point, and far cheaper on a long run. (seq, health) oldest first.
/// For the recovery bench; a resume verifies incrementally ([`analyse_for_resume`]).
#[cfg(feature = "internals")]
pub async fn verify(store: &Store, blobs: &BlobStore, run: RunId) -> Result<Vec<(i64, Health)>> {
    verify_after(store, blobs, run, 0).await
}

/// What a resume needs to pick its recovery point: the checkpoints after the last one an earlier
/// resume verified (if that one is still stored with the checksum it had then) are verified; the
/// prefix before it is not read again, so resuming does not grow with the run. (the analysis,
/// the seq verified through before).
pub async fn analyse_for_resume(
    store: &Store,
    blobs: &BlobStore,
    run: RunId,
) -> Result<(RecoveryAnalysis, i64)> {
    let verified = checkpoints::verified_through(store.pool(), run)
        .await?
        .unwrap_or(0);
    let health = verify_after(store, blobs, run, verified).await?;
    let acknowledged: BTreeSet<i64> = checkpoints::damage(store.pool(), run)
        .await?
        .into_iter()
        .map(|d| d.seq)
        .collect();
    let pruned_through = checkpoints::pruned_through(store.pool(), run).await?;
    let analysis = recovery_point_past(&health, &acknowledged, pruned_through, verified);
    // The point is always verified now: when it is the end of the old prefix and no longer
    // checks out, everything is verified again.
    if let Some(p) = analysis.point.filter(|p| *p <= verified) {
        let checked = verify_range(store, blobs, run, p, p + 1).await?;
        if checked != [(p, Health::Valid)] {
            let health = verify_after(store, blobs, run, 0).await?;
            return Ok((
                recovery_point_after(&health, &acknowledged, pruned_through),
                0,
            ));
        }
    }
    Ok((analysis, verified))
}

/// Verifies the checkpoints with seq > `after`, as [`verify`] does.
async fn verify_after(
    store: &Store,
    blobs: &BlobStore,
    run: RunId,
    after: i64,
) -> Result<Vec<(i64, Health)>> {
    // A long run has many checkpoints: read them in seq ranges over several connections at once
    // (each SQLite connection has its own thread), and hash as rows arrive.
    let Some((lo, hi)) = checkpoints::seq_range(store.pool(), run).await? else {
        return Ok(Vec::new());
    };
    let lo = lo.max(after + 1);
    if lo > hi {
        return Ok(Vec::new());
    }
    const PARTS: i64 = 4;
    let span = (hi - lo) / PARTS + 1;
    let parts =
        (0..PARTS).map(|k| verify_range(store, blobs, run, lo + k * span, lo + (k + 1) * span));
    let mut out = Vec::new();
    for part in futures_util::future::try_join_all(parts).await? {
        out.extend(part);
    }
    Ok(out)
}

/// Checkpoints with `from <= seq < to`.
async fn verify_range(
    store: &Store,
    blobs: &BlobStore,
    run: RunId,
    from: i64,
    to: i64,
) -> Result<Vec<(i64, Health)>> {
    // Checkpoints kept in the blob store are read after the scan: (index in `out`, digest).
    let mut in_blobs = Vec::new();
    let mut out = Vec::new();
    checkpoints::each_sealed(store.pool(), run, from, to, |c| {
        let ok = match (&c.payload, &c.blob) {
            (Some(bytes), _) => Digest::of(bytes).as_str() == c.sha256,
            // A blob is verified against its name (the same digest) when read.
            (None, Some(hash)) => match Digest::parse(hash).filter(|d| d.as_str() == c.sha256) {
                Some(d) => {
                    in_blobs.push((out.len(), d));
                    true
                }
                None => false,
            },
            (None, None) => false,
        } && c.schema_version <= crate::checkpoint::SCHEMA_VERSION;
        out.push((c.seq, if ok { Health::Valid } else { Health::Invalid }));
    })
    .await?;
    for (at, digest) in in_blobs {
        if blobs.get(&digest).await.is_err() {
            if let Some(entry) = out.get_mut(at) {
                entry.1 = Health::Invalid;
            }
        }
    }
    Ok(out)
}

/// Loads and decodes one checkpoint, verified.
pub async fn load(
    store: &Store,
    blobs: &BlobStore,
    run: RunId,
    seq: i64,
) -> Result<Result<Checkpoint, String>> {
    let row = checkpoints::get(store.pool(), run, seq).await?;
    Ok(payload_of(&row, blobs).await)
}

/// The recovery analysis over inspected checkpoints and the damage already acknowledged.
pub async fn analyse(
    store: &Store,
    run: RunId,
    inspected: &[Inspected],
) -> Result<RecoveryAnalysis> {
    let acknowledged: BTreeSet<i64> = checkpoints::damage(store.pool(), run)
        .await?
        .into_iter()
        .map(|d| d.seq)
        .collect();
    let health: Vec<(i64, Health)> = inspected
        .iter()
        .map(|i| {
            (
                i.seq,
                if i.payload.is_ok() {
                    Health::Valid
                } else {
                    Health::Invalid
                },
            )
        })
        .collect();
    let pruned_through = checkpoints::pruned_through(store.pool(), run).await?;
    Ok(recovery_point_after(&health, &acknowledged, pruned_through))
}
