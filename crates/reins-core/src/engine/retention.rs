//! Retention: finished runs keep their last N checkpoints; blobs nothing needs any more are removed.
//! Pre-images stay as long as the journal holds their intent (rollback needs them), and a blob
//! younger than a grace period stays too, since a worker may be about to commit what refers to it.

use std::collections::BTreeSet;

use crate::event::{self as ev, GcReport};
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::Result;
use crate::store::write::Write;
use crate::store::{audit, audit::Actor, checkpoints, intents, runs};

use super::commit::Change;
use super::{Engine, Silent};

/// Blob files modified more recently than this are never removed.
pub const BLOB_GRACE_MS: i64 = 10 * 60 * 1000;

impl Engine {
    pub async fn gc(&self, keep: usize, dry_run: bool) -> Result<GcReport> {
        let pool = self.store.pool();
        let keep = keep.max(1);
        let mut report = GcReport {
            dry_run,
            keep,
            ..GcReport::default()
        };
        let now = now_ms();
        let mut plan = Vec::new();
        for (run, _) in runs::list(pool).await? {
            if !run.state.is_terminal() {
                continue;
            }
            let rows = checkpoints::sizes(pool, run.id).await?;
            if rows.len() <= keep {
                continue;
            }
            let doomed = &rows[..rows.len() - keep];
            let through = doomed.last().map_or(0, |(seq, _, _)| *seq);
            report.runs += 1;
            report.checkpoints += doomed.len() as u64;
            report.checkpoint_bytes += doomed.iter().map(|(_, size, _)| size).sum::<i64>();
            plan.push((run.id, through, doomed.len()));
        }
        if !dry_run {
            for (run, through, count) in &plan {
                let change = Change::rows(vec![Write::PruneCheckpoints { through: *through }])
                    .event(audit::Event::new(
                        Actor::User,
                        Some(*run),
                        ev::RetentionPruned {
                            through: *through,
                            checkpoints: *count,
                            keep,
                        },
                    ));
                self.commit(Some(*run), change, None, &Silent).await?;
            }
        }

        // What is still needed: checkpoint payloads in the blob store, every pre-image in the
        // journal, and the workspace fingerprints and files of runs that may still resume.
        let doomed_refs: BTreeSet<String> = if dry_run {
            let mut refs = BTreeSet::new();
            for (run, through, _) in &plan {
                for (seq, _, blob) in checkpoints::sizes(pool, *run).await? {
                    if seq <= *through {
                        refs.extend(blob);
                    }
                }
            }
            refs
        } else {
            BTreeSet::new()
        };
        let mut needed: BTreeSet<Digest> = checkpoints::blob_refs(pool)
            .await?
            .into_iter()
            .filter(|h| !doomed_refs.contains(h))
            .filter_map(|h| Digest::parse(&h))
            .collect();
        needed.extend(
            intents::all_pre_images(pool)
                .await?
                .into_iter()
                .filter_map(|i| i.sha256),
        );
        for (run, _) in runs::list(pool).await? {
            if run.state.is_terminal() {
                continue;
            }
            let inspected =
                crate::engine::stored::inspect(&self.store, &self.blobs, run.id).await?;
            for cp in inspected.iter().filter_map(|i| i.payload.as_ref().ok()) {
                needed.extend(cp.workspace.clone());
                // Files as a checkpoint holds them: what rolling back to it restores (the
                // content kept before an agent's unasked change, among others).
                needed.extend(cp.files.values().flatten().cloned());
            }
            // Large tool outputs the agent refers to as artifacts.
            for result in
                crate::store::steps::large_results(pool, run.id, crate::agent::ARTIFACT_BYTES)
                    .await?
            {
                needed.insert(Digest::of(result.as_bytes()));
            }
        }

        for (digest, path) in self.blobs.files()? {
            if needed.contains(&digest) {
                continue;
            }
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(_) => continue,
            };
            let modified_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(now, |d| i64::try_from(d.as_millis()).unwrap_or(now));
            if now - modified_ms < BLOB_GRACE_MS {
                report.young_blobs_kept += 1;
                continue;
            }
            report.blob_files += 1;
            report.blob_file_bytes += meta.len();
            if !dry_run {
                self.blobs.remove(&digest)?;
            }
        }
        // In the database: small pre-images, and in team mode every blob. The same grace applies.
        let in_db =
            crate::store::blobs::unreferenced(pool, &needed, now - BLOB_GRACE_MS, dry_run).await?;
        report.db_blobs = in_db.removed;
        report.young_blobs_kept += usize::try_from(in_db.young).unwrap_or(usize::MAX);
        if !dry_run {
            let change = Change::default().event(audit::Event::new(
                Actor::User,
                None,
                ev::Kind::RetentionGc(report.clone()),
            ));
            self.commit(None, change, None, &Silent).await?;
        }
        Ok(report)
    }
}
