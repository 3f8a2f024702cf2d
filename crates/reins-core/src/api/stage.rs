//! Staging through the door: run a command against a copy-on-write view of a workspace, confined
//! and without network, and say what it did (file by file, with diffs) without applying any of it.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::Reins;
use crate::error::{Error, Result};
use crate::stage::{Kind, StagedError};

/// A command to stage.
#[derive(Clone, Debug)]
pub struct StageRequest {
    /// The workspace the view is made of.
    pub workspace: PathBuf,
    /// The program and its arguments; one string alone is a command line, run by bash.
    pub argv: Vec<String>,
    pub timeout: Duration,
    /// The layer's size cap in bytes.
    pub cap_bytes: u64,
}

/// One path the staged command changed.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StagedChange {
    pub path: String,
    /// "created", "changed", "mode", "deleted".
    pub kind: &'static str,
    /// In words: "created", "mode 644 → 755", "now a symlink to x".
    pub said: String,
    /// A unified diff (binaries by size and hash).
    pub diff: String,
}

/// What a staged command did, applied nowhere.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StagedCommand {
    pub workspace: PathBuf,
    /// How the view was made: "overlay in a user namespace", "overlay (root)".
    pub mode: String,
    pub setup_micros: u64,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub elapsed_ms: u64,
    /// "changes 3 files, creates 1, deletes none; no network used".
    pub summary: String,
    /// It saw everything it needed: nothing refused, the layer not full, no time limit.
    pub whole: bool,
    /// What the kernel refused it, in words.
    pub refused: Vec<String>,
    /// How it ran and its output, as an agent would read it.
    pub report: String,
    pub changes: Vec<StagedChange>,
    /// What it did that applying the staged result as file changes would not carry (a symlink,
    /// an empty folder), in words.
    pub not_carried: Vec<String>,
}

impl Reins {
    /// Runs `req` staged and reads what it did. The workspace is left as it was.
    pub async fn stage_command(&self, req: StageRequest) -> Result<StagedCommand> {
        let workspace = std::fs::canonicalize(&req.workspace)
            .map_err(|e| Error::Invalid(format!("workspace {}: {e}", req.workspace.display())))?;
        if !workspace.is_dir() {
            return Err(Error::Invalid(format!(
                "workspace {} is not a folder",
                workspace.display()
            )));
        }
        if self
            .engine
            .containment()
            .reins
            .iter()
            .any(|r| r.starts_with(&workspace) || workspace.starts_with(r))
        {
            return Err(Error::Invalid(format!(
                "{} holds Reins' own data or settings: it cannot be a workspace",
                workspace.display()
            )));
        }
        let argv = match req.argv.as_slice() {
            [] => return Err(Error::Invalid("nothing to stage: give a command".into())),
            [line] if line.trim().is_empty() => {
                return Err(Error::Invalid(
                    "nothing to stage: the command is empty".into(),
                ))
            }
            [line] => ["bash", "--noprofile", "--norc", "-c", line.as_str()]
                .map(str::to_owned)
                .to_vec(),
            argv => argv.to_vec(),
        };
        let setup = self.engine.containment().clone();
        let ws = workspace.clone();
        let run = tokio::task::spawn_blocking(move || {
            let run = crate::stage::stage(&setup, &ws, &argv, req.timeout, req.cap_bytes)?;
            let changes = run
                .staged
                .changes
                .iter()
                .map(|c| {
                    Ok(StagedChange {
                        path: c.path.clone(),
                        kind: match c.kind() {
                            Kind::Created => "created",
                            Kind::Changed => "changed",
                            Kind::ModeChanged => "mode",
                            Kind::Deleted => "deleted",
                        },
                        said: c.said(),
                        diff: c.diff(&ws)?,
                    })
                })
                .collect::<std::result::Result<Vec<_>, StagedError>>()?;
            let jail = crate::workspace::Workspace::open(&ws)
                .map_err(|e| StagedError::Path(e.to_string()))?;
            let not_carried = run.staged.plan(&jail, &[])?.unexpressed;
            Ok::<_, StagedError>((run, changes, not_carried))
        })
        .await
        .map_err(|e| Error::Io {
            context: "staging".into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let (run, changes, not_carried) = run.map_err(staged_error)?;
        Ok(StagedCommand {
            workspace,
            mode: run.staged.mode.clone(),
            setup_micros: run.staged.setup_micros,
            exit_code: run.outcome.exit_code,
            signal: run.outcome.signal,
            timed_out: run.outcome.timed_out,
            elapsed_ms: u64::try_from(run.outcome.elapsed.as_millis()).unwrap_or(u64::MAX),
            summary: run.summary(),
            whole: run.whole(),
            refused: run.refused.clone(),
            report: run.outcome.report(),
            changes,
            not_carried,
        })
    }
}

fn staged_error(e: StagedError) -> Error {
    match e {
        StagedError::NoHelper | StagedError::NotStaged(_) => Error::Conflict(e.to_string()),
        other => Error::Io {
            context: "staging".into(),
            source: std::io::Error::other(other.to_string()),
        },
    }
}
