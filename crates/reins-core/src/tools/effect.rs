//! Planning and applying file effects. A plan is computed from the files as they are now and fixes
//! everything about the effect in advance: pre-images (stored before it runs), post-images (how a
//! restart recognises it happened), the exact diff, and the operations.

use crate::action::{Action, ToolError};
use crate::digest::Digest;
use crate::journal::FileImage;
use crate::workspace::{diff, JailError, RelPath, Workspace};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// `mode`: the permission bits to set (a staged command's file); None keeps an existing
    /// file's, and a new file gets the usual ones.
    Put {
        path: RelPath,
        bytes: Vec<u8>,
        mode: Option<u32>,
    },
    Remove { path: RelPath },
    Rename { from: RelPath, to: RelPath },
}

#[derive(Clone, Debug, Default)]
pub struct EffectPlan {
    pub pre: Vec<FileImage>,
    pub post: Vec<FileImage>,
    /// Bytes of the pre-images that exist: these go to the blob store before the effect.
    pub pre_bytes: Vec<Vec<u8>>,
    pub ops: Vec<FileOp>,
    /// Unified diff of exactly what will change.
    pub preview: String,
    /// The text the agent gets back once the effect is confirmed.
    pub summary: String,
    /// The effect lands a staged command's result and that command failed: the step reports
    /// the failure (its output), though its files landed as approved.
    pub failed: bool,
}

fn image(path: &RelPath, bytes: Option<&[u8]>) -> FileImage {
    FileImage {
        path: path.as_str().to_owned(),
        sha256: bytes.map(Digest::of),
        dir: None,
    }
}

fn failed(tool: &'static str, detail: String) -> ToolError {
    ToolError::Failed { tool, detail }
}

/// The plan of a file effect, or None for an action that changes no file.
pub fn plan_files(action: &Action, ws: &Workspace) -> Result<Option<EffectPlan>, ToolError> {
    if let Action::Permission(p) = action {
        // Planned for its card and its binding to the files as reviewed; Reins applies nothing.
        return match p.implied.as_deref() {
            Some(implied) => plan_files(implied, ws),
            None => Ok(None),
        };
    }
    if !action.is_file_effect() {
        return Ok(None);
    }
    plan(action, ws).map(Some)
}

/// Step 3 of the protocol: read the pre-images through the jail and fix the effect. An executable
/// file is called out above its diff (its mode is kept).
pub fn plan(action: &Action, ws: &Workspace) -> Result<EffectPlan, ToolError> {
    let mut plan = plan_bytes(action, ws)?;
    // Bound to the folders as they are now (F1): the effect is refused in any other.
    for (img, path) in plan.pre.iter_mut().zip(action.touched()) {
        if img.path == path.as_str() {
            img.dir = ws.folder_id(path)?;
        }
    }
    if let Some(note) = mode_note(action, ws) {
        plan.preview = format!("{note}\n{}", plan.preview);
    }
    Ok(plan)
}

/// The line a preview starts with when the action touches executable files: which, and their
/// modes. A review is bound to it: a `chmod +x` after the review changes it.
pub fn mode_note(action: &Action, ws: &Workspace) -> Option<String> {
    let exec: Vec<String> = action
        .touched()
        .into_iter()
        .filter_map(|p| {
            ws.mode(p)
                .filter(|m| m & 0o111 != 0)
                .map(|m| format!("{p} (mode {m:o})"))
        })
        .collect();
    (!exec.is_empty()).then(|| format!("{MODE_NOTE}{}; it stays executable", exec.join(", ")))
}

/// How the mode note begins.
const MODE_NOTE: &str = "note: executable: ";

/// The mode note a preview carries, if any: what a review saw of the files' modes.
pub fn mode_line(preview: &str) -> Option<&str> {
    preview.lines().find(|l| l.starts_with(MODE_NOTE))
}

fn plan_bytes(action: &Action, ws: &Workspace) -> Result<EffectPlan, ToolError> {
    match action {
        Action::Write { path, content } => {
            let old = ws.image(path)?;
            let new = content.as_bytes();
            Ok(EffectPlan {
                pre: vec![image(path, old.as_deref())],
                post: vec![image(path, Some(new))],
                preview: diff::unified(path.as_str(), old.as_deref(), Some(new)),
                summary: format!(
                    "{} {path} ({} bytes, sha256 {})",
                    if old.is_some() { "replaced" } else { "created" },
                    new.len(),
                    Digest::of(new).short()
                ),
                failed: false,
                pre_bytes: old.into_iter().collect(),
                ops: vec![FileOp::Put {
                    path: path.clone(),
                    bytes: new.to_vec(),
                    mode: None,
                }],
            })
        }
        Action::Edit { path, old, new } => {
            let before = ws
                .image(path)?
                .ok_or_else(|| failed("fs.edit", format!("{path}: no such file")))?;
            let text = std::str::from_utf8(&before)
                .map_err(|_| failed("fs.edit", format!("{path} is binary; fs.edit edits text")))?;
            match text.matches(old.as_str()).count() {
                1 => {}
                0 => return Err(failed("fs.edit", format!("`old` does not occur in {path}; read the file and quote it exactly"))),
                n => return Err(failed("fs.edit", format!("`old` occurs {n} times in {path}; include more surrounding text so it occurs exactly once"))),
            }
            let after = text.replacen(old.as_str(), new, 1).into_bytes();
            Ok(EffectPlan {
                pre: vec![image(path, Some(&before))],
                post: vec![image(path, Some(&after))],
                preview: diff::unified(path.as_str(), Some(&before), Some(&after)),
                summary: format!("edited {path} (sha256 {})", Digest::of(&after).short()),
                failed: false,
                pre_bytes: vec![before],
                ops: vec![FileOp::Put {
                    path: path.clone(),
                    bytes: after,
                    mode: None,
                }],
            })
        }
        Action::Delete { path } => {
            let before = ws
                .image(path)?
                .ok_or_else(|| failed("fs.delete", format!("{path}: no such file")))?;
            Ok(EffectPlan {
                pre: vec![image(path, Some(&before))],
                post: vec![image(path, None)],
                preview: diff::unified(path.as_str(), Some(&before), None),
                summary: format!(
                    "deleted {path} ({} bytes; restorable by rollback)",
                    before.len()
                ),
                failed: false,
                pre_bytes: vec![before],
                ops: vec![FileOp::Remove { path: path.clone() }],
            })
        }
        Action::Move { from, to } => {
            if from == to {
                return Err(failed(
                    "fs.move",
                    "`from` and `to` are the same path".into(),
                ));
            }
            let bytes = ws
                .image(from)?
                .ok_or_else(|| failed("fs.move", format!("{from}: no such file")))?;
            if ws.image(to)?.is_some() {
                return Err(failed(
                    "fs.move",
                    format!("{to} already exists; fs.move never overwrites"),
                ));
            }
            Ok(EffectPlan {
                pre: vec![image(from, Some(&bytes)), image(to, None)],
                post: vec![image(from, None), image(to, Some(&bytes))],
                preview: format!(
                    "rename {from} -> {to} ({} bytes, content unchanged)\n",
                    bytes.len()
                ),
                summary: format!("moved {from} to {to}"),
                failed: false,
                pre_bytes: vec![bytes],
                ops: vec![FileOp::Rename {
                    from: from.clone(),
                    to: to.clone(),
                }],
            })
        }
        Action::Read { .. }
        | Action::List { .. }
        | Action::Search { .. }
        | Action::Shell(_)
        | Action::Fetch(_)
        | Action::Remember(_)
        | Action::Mcp(_)
        | Action::Permission(_) => Err(failed(
            "fs.read",
            "only file changes are planned from the disk".into(),
        )),
    }
}

/// Rebuilds the bytes an effect left at `path` from the action and its pre-images, so post-images
/// never need storing: rollback derives them from the journal. `pre_bytes` fetches a pre-image.
pub fn post_image(
    action: &Action,
    path: &str,
    pre: &[FileImage],
    pre_bytes: impl Fn(&Digest) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let pre_of = |p: &str| {
        pre.iter()
            .find(|i| i.path == p)?
            .sha256
            .as_ref()
            .and_then(&pre_bytes)
    };
    match action {
        Action::Write { path: p, content } if p.as_str() == path => {
            Some(content.as_bytes().to_vec())
        }
        Action::Edit { path: p, old, new } if p.as_str() == path => {
            let text = String::from_utf8(pre_of(path)?).ok()?;
            Some(text.replacen(old.as_str(), new, 1).into_bytes())
        }
        Action::Move { from, to } if to.as_str() == path => pre_of(from.as_str()),
        _ => None,
    }
}

/// A file effect that failed. `untouched`: the jail refused before anything on disk changed (a
/// link on the path, a file of the wrong kind, a name taken meanwhile), so the effect certainly did
/// not happen and nothing needs checking.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct ApplyError {
    pub error: JailError,
    pub untouched: bool,
}

/// Step 8 of the protocol: perform the operations, each atomic.
pub fn apply(plan: &EffectPlan, ws: &Workspace) -> Result<(), ApplyError> {
    let folder = |p: &RelPath| {
        plan.pre
            .iter()
            .find(|i| i.path == p.as_str())
            .and_then(|i| i.dir.as_deref())
    };
    for (done, op) in plan.ops.iter().enumerate() {
        let result = match op {
            FileOp::Put { path, bytes, mode } => ws.write_mode_in(path, bytes, folder(path), *mode),
            FileOp::Remove { path } => ws.remove_in(path, folder(path)),
            FileOp::Rename { from, to } => ws.rename_in(from, to, (folder(from), folder(to))),
        };
        if let Err(error) = result {
            let untouched = done == 0 && error.refused_before_acting();
            return Err(ApplyError { error, untouched });
        }
        crate::fault::record_effect(&match op {
            FileOp::Put { path, bytes, .. } => format!("Put {path} sha256:{}", Digest::of(bytes)),
            FileOp::Remove { path } => format!("Remove {path}"),
            FileOp::Rename { from, to } => format!("Rename {from} -> {to}"),
        });
        if done == 0 && plan.ops.len() > 1 {
            // Killed with one file of several written (a staged result applies file by file).
            crate::fault_point!("between_files");
        }
    }
    Ok(())
}
