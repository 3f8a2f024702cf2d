//! A staged result as a file effect: the operations that land exactly what the command did in the
//! view, with the pre-images the journal keeps and the post-images a restart recognises. It is
//! bound to the workspace as it was staged: a file that moved since is refused, and the command is
//! staged again. What no file operation can carry (a symlink, an empty folder, a folder's mode) is
//! named, so the card can say the staged result is not all of it.

use super::{Change, Kind, Node, Staged, StagedError};
use crate::digest::Digest;
use crate::journal::FileImage;
use crate::tools::{EffectPlan, FileOp};
use crate::workspace::{RelPath, Workspace};

/// A staged result as an effect, and what it leaves out.
#[derive(Debug)]
pub struct StagedPlan {
    pub plan: EffectPlan,
    /// Paths the person dropped from the change before approving.
    pub dropped: Vec<String>,
    /// What the staged run did that these operations do not carry, in words.
    pub unexpressed: Vec<String>,
}

impl Staged {
    /// The effect that lands this result in `ws`, without the paths in `drop` (and what lies
    /// under them). Refused with [`StagedError::Moved`] when a file is no longer as it was staged.
    pub fn plan(&self, ws: &Workspace, drop: &[String]) -> Result<StagedPlan, StagedError> {
        let dropped_by = |path: &str| {
            drop.iter()
                .find(|d| path == d.as_str() || path.starts_with(&format!("{d}/")))
                .cloned()
        };
        let mut out = StagedPlan {
            plan: EffectPlan::default(),
            dropped: Vec::new(),
            unexpressed: Vec::new(),
        };
        let mut kept: Vec<&Change> = Vec::new();
        for change in &self.changes {
            if let Some(d) = dropped_by(&change.path) {
                if !out.dropped.contains(&d) {
                    out.dropped.push(d);
                }
                continue;
            }
            let rel = RelPath::parse(&change.path)
                .map_err(|_| StagedError::Path(change.path.clone()))?;
            match (&change.before, &change.after) {
                (_, Some(Node::Symlink { .. })) | (Some(Node::Symlink { .. }), _) => {
                    out.unexpressed
                        .push(format!("{}: {}", change.path, change.said()));
                    continue;
                }
                (_, Some(Node::Dir { .. })) | (Some(Node::Dir { .. }), None) => {
                    // A folder comes with its files; on its own it is not carried.
                    let has_files = self.changes.iter().any(|c| {
                        c.path.starts_with(&format!("{}/", change.path))
                            && dropped_by(&c.path).is_none()
                    });
                    if !has_files || change.kind() == Kind::ModeChanged {
                        out.unexpressed
                            .push(format!("{}: {}", change.path, change.said()));
                    }
                    continue;
                }
                _ => {}
            }
            let current = ws.image(&rel).map_err(|e| StagedError::Path(e.to_string()))?;
            let before = match &change.before {
                Some(Node::File { sha256, .. }) => Some(sha256.clone()),
                _ => None,
            };
            if current.as_deref().map(Digest::of) != before {
                return Err(StagedError::Moved(change.path.clone()));
            }
            let dir = ws
                .folder_id(&rel)
                .map_err(|e| StagedError::Path(e.to_string()))?;
            out.plan.pre.push(FileImage {
                path: change.path.clone(),
                sha256: before,
                dir,
            });
            if let Some(bytes) = current {
                out.plan.pre_bytes.push(bytes);
            }
            match &change.after {
                Some(Node::File { sha256, mode, .. }) => {
                    let at = change
                        .after_at
                        .as_ref()
                        .ok_or_else(|| StagedError::Export(format!("{}: no bytes", change.path)))?;
                    let bytes = std::fs::read(at).map_err(|e| StagedError::io(at, e))?;
                    if &Digest::of(&bytes) != sha256 {
                        return Err(StagedError::Export(format!(
                            "{}: the layer's bytes changed after it was read",
                            change.path
                        )));
                    }
                    out.plan.post.push(FileImage {
                        path: change.path.clone(),
                        sha256: Some(sha256.clone()),
                        dir: None,
                    });
                    out.plan.ops.push(FileOp::Put {
                        path: rel,
                        bytes,
                        mode: Some(*mode),
                    });
                }
                _ => {
                    out.plan.post.push(FileImage {
                        path: change.path.clone(),
                        sha256: None,
                        dir: None,
                    });
                    out.plan.ops.push(FileOp::Remove { path: rel });
                }
            }
            kept.push(change);
        }
        for change in &kept {
            out.plan.preview.push_str(&change.diff(ws.root())?);
        }
        let (changed, created, deleted) = super::tally(kept.iter().copied());
        out.plan.summary = format!(
            "applied the staged result: {changed} changed, {created} created, {deleted} deleted{}",
            if out.dropped.is_empty() {
                String::new()
            } else {
                format!(" ({} left out by the reviewer)", out.dropped.join(", "))
            }
        );
        Ok(out)
    }
}
