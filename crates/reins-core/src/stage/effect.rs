//! What a review card of a staged command keeps: the result as the journal will apply it. The new
//! bytes are in the blob store by their hash, so an approval given after a restart lands exactly
//! what was shown; the files' hashes as staged bind it to the workspace as it was.

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::journal::FileImage;
use crate::tools::{EffectPlan, FileOp};
use crate::workspace::{RelPath, Workspace};

use super::StagedError;

/// One file the approval lands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StagedFile {
    pub path: String,
    /// Its hash when staged (None: it did not exist).
    pub before: Option<Digest>,
    /// What it becomes (None: deleted).
    pub after: Option<StagedBytes>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StagedBytes {
    /// The blob holding the new bytes.
    pub sha256: Digest,
    pub mode: u32,
}

/// A staged command's result, as a card keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StagedEffect {
    /// How the view was made ("overlay in a user namespace").
    pub mode: String,
    /// "changes 2 files, creates 1, deletes none; no network used".
    pub summary: String,
    /// How the staged run ended and its output, as the agent hears it.
    pub report: String,
    pub files: Vec<StagedFile>,
    /// The staged run ended well (exit 0): the step reports its failure otherwise.
    pub ok: bool,
    /// What the layer held that is not carried (a symlink, an empty folder), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_carried: Vec<String>,
    /// The files (or folders) the person left out when approving: they do not land.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

impl StagedEffect {
    /// The record of `plan` (made by [`super::Staged::plan`]) with the staged run's words.
    pub fn of(
        plan: &super::plan::StagedPlan,
        mode: &str,
        summary: &str,
        report: &str,
        ok: bool,
    ) -> Self {
        let files = plan
            .plan
            .pre
            .iter()
            .zip(&plan.plan.post)
            .zip(&plan.plan.ops)
            .map(|((pre, post), op)| StagedFile {
                path: pre.path.clone(),
                before: pre.sha256.clone(),
                after: match (op, &post.sha256) {
                    (FileOp::Put { mode, .. }, Some(sha256)) => Some(StagedBytes {
                        sha256: sha256.clone(),
                        mode: mode.unwrap_or(0o644),
                    }),
                    _ => None,
                },
            })
            .collect();
        Self {
            mode: mode.to_owned(),
            summary: summary.to_owned(),
            report: report.to_owned(),
            files,
            ok,
            not_carried: plan.unexpressed.clone(),
            left_out: Vec::new(),
        }
    }

    /// This result without the files `paths` name (each a file it changes, or a folder holding
    /// some): what lands when the person leaves them out. A path that names none is refused.
    pub fn leaving_out(&self, paths: &[String]) -> Result<Self, String> {
        let under = |file: &str, p: &str| file == p || file.starts_with(&format!("{p}/"));
        let mut out = self.clone();
        for p in paths {
            let p = p.trim().trim_end_matches('/');
            if !self.files.iter().any(|f| under(&f.path, p)) {
                return Err(format!(
                    "{p:?} is not among the files this staged command changes; leave out one of: {}",
                    self.files
                        .iter()
                        .map(|f| f.path.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            out.files.retain(|f| !under(&f.path, p));
            out.left_out.push(p.to_owned());
        }
        Ok(out)
    }

    /// "staged (overlay in a user namespace): changes 2 files, creates 1, deletes none; no
    /// network used": the card's line, in the inbox and the audit log.
    pub fn said(&self) -> String {
        let left = match self.left_out.as_slice() {
            [] => String::new(),
            paths => format!("; left out by the reviewer: {}", paths.join(", ")),
        };
        format!("staged ({}): {}{left}", self.mode, self.summary)
    }

    /// The new bytes each file needs, by hash.
    pub fn blobs(&self) -> impl Iterator<Item = &Digest> {
        self.files
            .iter()
            .filter_map(|f| f.after.as_ref().map(|a| &a.sha256))
    }

    /// The effect that lands it in `ws` now, `bytes` giving each blob. Its pre-images are the
    /// files as they are now: the caller binds them to the ones the card was made from. Only the
    /// files still at their staged state are included when `remaining` (recovery of a half-applied
    /// result: those already at their new state are left as they are).
    pub fn plan(
        &self,
        ws: &Workspace,
        bytes: &std::collections::BTreeMap<Digest, Vec<u8>>,
        remaining: bool,
    ) -> Result<EffectPlan, StagedError> {
        let mut plan = EffectPlan {
            summary: format!("ran staged ({}): {}", self.mode, self.summary),
            ..EffectPlan::default()
        };
        for f in &self.files {
            let rel = RelPath::parse(&f.path).map_err(|_| StagedError::Path(f.path.clone()))?;
            let current = ws.image(&rel).map_err(|e| StagedError::Path(e.to_string()))?;
            let now = current.as_deref().map(Digest::of);
            // At its new state: its new bytes, and its new mode (a chmod changes no byte).
            let landed = match &f.after {
                Some(a) => {
                    now.as_ref() == Some(&a.sha256)
                        && ws.mode(&rel).map(|m| m & 0o777) == Some(a.mode & 0o777)
                }
                None => now.is_none(),
            };
            if remaining && landed {
                continue;
            }
            plan.pre.push(FileImage {
                path: f.path.clone(),
                sha256: now,
                dir: ws
                    .folder_id(&rel)
                    .map_err(|e| StagedError::Path(e.to_string()))?,
            });
            if let Some(b) = current {
                plan.pre_bytes.push(b);
            }
            plan.post.push(FileImage {
                path: f.path.clone(),
                sha256: f.after.as_ref().map(|a| a.sha256.clone()),
                dir: None,
            });
            plan.ops.push(match &f.after {
                Some(after) => FileOp::Put {
                    path: rel,
                    bytes: bytes
                        .get(&after.sha256)
                        .cloned()
                        .ok_or_else(|| StagedError::Export(format!("blob {} is missing", after.sha256)))?,
                    mode: Some(after.mode),
                },
                None => FileOp::Remove { path: rel },
            });
        }
        Ok(plan)
    }
}
