//! What a retention pass removed (or, on a dry run, would remove): the payload of `retention.gc`.

use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GcReport {
    pub dry_run: bool,
    pub keep: usize,
    /// Finished runs that had checkpoints to remove.
    pub runs: usize,
    pub checkpoints: u64,
    pub checkpoint_bytes: i64,
    pub blob_files: usize,
    pub blob_file_bytes: u64,
    /// Small pre-images kept in the database that no intent refers to any more.
    pub db_blobs: u64,
    /// Unreferenced blob files left alone because they are younger than the grace period.
    pub young_blobs_kept: usize,
}
