//! Rollback: restore the files a run touched to their state at a checkpoint, from the pre-image blobs.
//! The current state is saved first (a `snapshot` checkpoint), so the rollback itself can be undone by
//! rolling back to that snapshot.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::event as ev;
use crate::checkpoint::{Checkpoint, Level, Meta};
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::run::RunState;
use crate::store::{audit, audit::Actor, checkpoints, intents, runs};
use crate::action::Action;
use crate::tools;
use crate::workspace::{diff, RelPath, Workspace};

use super::stored;
use super::commit::Change;
use super::{Engine, Silent};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RollbackChange {
    pub path: String,
    pub from: Option<Digest>,
    pub to: Option<Digest>,
    pub diff: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RollbackReport {
    pub run: RunId,
    pub to: i64,
    pub dry_run: bool,
    pub changes: Vec<RollbackChange>,
    /// The checkpoint holding the state from before the rollback (roll back to it to undo).
    pub snapshot: Option<i64>,
    /// The checkpoint recording the restored state.
    pub checkpoint: Option<i64>,
}

impl Engine {
    pub async fn rollback(&self, run: RunId, to: i64, dry_run: bool) -> Result<RollbackReport> {
        let row = runs::get(self.store.pool(), run).await?;
        if matches!(
            row.state,
            RunState::Running | RunState::PauseRequested | RunState::Queued
        ) {
            return Err(Error::Conflict(format!(
                "run {run} is {}; roll back a run only when it is finished, paused, suspended or awaiting approval",
                row.state
            )));
        }
        let ws = Workspace::open(std::path::Path::new(&row.workspace))?;
        let inspected = stored::inspect(&self.store, &self.blobs, run).await?;
        let pruned = checkpoints::pruned_through(self.store.pool(), run).await?;
        let target = inspected.iter().find(|i| i.seq == to).ok_or_else(|| {
            if to <= pruned {
                Error::Invalid(format!(
                    "checkpoint {to} of run {run} was removed by retention (`reins gc`); the oldest kept is {}",
                    pruned + 1
                ))
            } else {
                Error::Invalid(format!(
                    "run {run} has no checkpoint {to}; see `reins show {run}`"
                ))
            }
        })?;
        let target: &Checkpoint = target.payload.as_ref().map_err(|e| {
            Error::Invalid(format!("checkpoint {to} is damaged ({e}); choose another"))
        })?;
        let analysis = stored::analyse(&self.store, run, &inspected).await?;
        let latest = analysis
            .point
            .and_then(|p| inspected.iter().find(|i| i.seq == p))
            .and_then(|i| i.payload.as_ref().ok())
            .cloned()
            .unwrap_or_else(|| target.clone());

        // Every path the run touched, and its state before the run first touched it.
        let mut before_run: BTreeMap<String, Option<Digest>> = BTreeMap::new();
        let journal = intents::list(self.store.pool(), run).await?;
        for intent in &journal {
            for img in &intent.pre_images {
                before_run
                    .entry(img.path.clone())
                    .or_insert(img.sha256.clone());
            }
        }
        let mut paths: Vec<String> = before_run.keys().cloned().collect();
        for i in inspected.iter().filter_map(|i| i.payload.as_ref().ok()) {
            paths.extend(i.files.keys().cloned());
        }
        paths.sort();
        paths.dedup();

        let mut changes = Vec::new();
        let mut current_state = BTreeMap::new();
        let mut wanted_bytes: Vec<(RelPath, Option<Vec<u8>>)> = Vec::new();
        let mut missing = Vec::new();
        for path in &paths {
            let wanted = match target.files.get(path) {
                Some(h) => h.clone(),
                None => match before_run.get(path) {
                    Some(h) => h.clone(),
                    None => continue,
                },
            };
            let rel = ws.resolve(path)?;
            let current = ws.image(&rel)?;
            let current_hash = current.as_deref().map(Digest::of);
            current_state.insert(path.clone(), current_hash.clone());
            if current_hash == wanted {
                continue;
            }
            let bytes = match &wanted {
                None => None,
                Some(h) => match self.content_at(&ws, &journal, path, h).await? {
                    Some(b) => Some(b),
                    None => {
                        missing.push(path.clone());
                        continue;
                    }
                },
            };
            changes.push(RollbackChange {
                path: path.clone(),
                from: current_hash,
                to: wanted,
                diff: diff::unified(path, current.as_deref(), bytes.as_deref()),
            });
            wanted_bytes.push((rel, bytes));
        }
        if !missing.is_empty() {
            return Err(Error::Invalid(format!(
                "cannot restore checkpoint {to}: the content of {} at that point is neither in the blob store nor derivable from the journal; nothing was changed",
                missing.join(", ")
            )));
        }
        let mut report = RollbackReport {
            run,
            to,
            dry_run,
            changes,
            snapshot: None,
            checkpoint: None,
        };
        if dry_run || report.changes.is_empty() {
            return Ok(report);
        }

        // Save the current state so the rollback can be undone.
        for (rel, _) in &wanted_bytes {
            if let Some(bytes) = ws.image(rel)? {
                self.blobs.put(&bytes).await?;
            }
        }
        let mut snapshot = latest.clone();
        snapshot.files.extend(current_state);
        snapshot.meta = Meta {
            written_at: now_ms(),
            note: format!("before rollback to {to}"),
            ..latest.meta.clone()
        };
        report.snapshot = Some(
            self.write_unowned(
                run,
                Level::Snapshot,
                &snapshot,
                ev::RollbackSnapshot { to }.into(),
            )
            .await?,
        );

        for (rel, bytes) in &wanted_bytes {
            match bytes {
                Some(b) => ws.write(rel, b)?,
                None => {
                    if ws.image(rel)?.is_some() {
                        ws.remove(rel)?;
                    }
                }
            }
        }
        let mut restored = latest;
        for c in &report.changes {
            restored.files.insert(c.path.clone(), c.to.clone());
        }
        restored.meta = Meta {
            written_at: now_ms(),
            note: format!("rolled back to {to}"),
            ..restored.meta
        };
        let performed = ev::RollbackPerformed {
            to,
            snapshot: report.snapshot,
            paths: report.changes.iter().map(|c| c.path.clone()).collect(),
        };
        report.checkpoint = Some(
            self.write_unowned(run, Level::Rollback, &restored, performed.into())
                .await?,
        );
        Ok(report)
    }

    /// The bytes a path held when its hash was `hash`: a stored blob, or else rebuilt from a confirmed
    /// effect in the journal that left that hash there. Verified against the hash.
    async fn content_at(
        &self,
        ws: &Workspace,
        journal: &[intents::IntentRow],
        path: &str,
        hash: &Digest,
    ) -> Result<Option<Vec<u8>>> {
        if let Some(bytes) = self.blob(hash).await? {
            return Ok(Some(bytes));
        }
        for intent in journal
            .iter()
            .filter(|i| i.status == crate::journal::IntentStatus::Confirmed)
        {
            let post = &intent.post_images;
            if !post
                .iter()
                .any(|img| img.path == path && img.sha256.as_ref() == Some(hash))
            {
                continue;
            }
            let opened = self
                .opened(&intent.action, &format!("step {}'s action", intent.step_seq))
                .await?;
            let Ok(action) = Action::parse(opened.call(), ws) else {
                continue;
            };
            let pre = &intent.pre_images;
            let mut pre_bytes = BTreeMap::new();
            for digest in pre.iter().filter_map(|i| i.sha256.as_ref()) {
                if let Some(bytes) = self.blob(digest).await? {
                    pre_bytes.insert(digest.clone(), bytes);
                }
            }
            if let Some(bytes) =
                tools::post_image(&action, path, pre, |d| pre_bytes.get(d).cloned())
            {
                if Digest::of(&bytes) == *hash {
                    return Ok(Some(bytes));
                }
            }
        }
        Ok(None)
    }

    /// A checkpoint written on a person's behalf while no worker owns the run.
    async fn write_unowned(
        &self,
        run: RunId,
        level: Level,
        cp: &Checkpoint,
        kind: ev::Kind,
    ) -> Result<i64> {
        let change = Change::default()
            .checkpoint(self.prepare(cp, level)?)
            .event(audit::Event::new(Actor::User, Some(run), kind));
        let applied = self.commit(Some(run), change, None, &Silent).await?;
        Ok(applied.checkpoint.unwrap_or(0))
    }
}
