//! Staged commands: what a command did when it ran against a copy-on-write view of the workspace,
//! read as changes to the workspace. The helper leaves the upper layer as an export
//! (`contain::stage`); this reads it against the workspace as it is now and says, file by file,
//! what was created, changed or deleted, with the bytes before and after, so a card can show the
//! real diff and an approval can apply exactly that. See docs/containment.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::contain::stage::{Entry, Export, BLOBS, EXPORT_FILE};
use crate::digest::Digest;

pub mod effect;
pub mod plan;
pub mod run;
#[cfg(test)]
mod tests;

pub use run::{stage, DEFAULT_CAP};

/// What is at a path, before or after: enough to tell a change and to bind an approval to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Node {
    File {
        sha256: Digest,
        size: u64,
        mode: u32,
    },
    Symlink {
        target: String,
    },
    Dir {
        mode: u32,
    },
}

/// One path the command changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// Relative to the workspace, `/`-separated.
    pub path: String,
    pub before: Option<Node>,
    pub after: Option<Node>,
    /// Where the new bytes of a file are, in the export.
    #[serde(skip)]
    pub after_at: Option<PathBuf>,
}

/// What a change does, in the card's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Created,
    Changed,
    /// Only its mode (permissions) changed.
    ModeChanged,
    Deleted,
}

impl Change {
    pub fn kind(&self) -> Kind {
        match (&self.before, &self.after) {
            (None, _) => Kind::Created,
            (Some(_), None) => Kind::Deleted,
            (
                Some(Node::File {
                    sha256: a, mode: m, ..
                }),
                Some(Node::File {
                    sha256: b, mode: n, ..
                }),
            ) if a == b && m != n => Kind::ModeChanged,
            (Some(Node::Dir { .. }), Some(Node::Dir { .. })) => Kind::ModeChanged,
            _ => Kind::Changed,
        }
    }

    fn is_dir(&self) -> bool {
        matches!(self.after.as_ref().or(self.before.as_ref()), Some(Node::Dir { .. }))
    }

    /// A unified diff of the file's bytes (text as lines, binaries by size and hash); a line of
    /// words for a directory, a symlink or a mode change.
    pub fn diff(&self, workspace: &Path) -> Result<String, StagedError> {
        let bytes = |node: &Option<Node>, at: Option<&Path>| -> Result<Option<Vec<u8>>, StagedError> {
            match (node, at) {
                (Some(Node::File { .. }), Some(at)) => {
                    std::fs::read(at).map(Some).map_err(|e| StagedError::io(at, e))
                }
                _ => Ok(None),
            }
        };
        let file = |n: &Option<Node>| matches!(n, Some(Node::File { .. }));
        if !file(&self.before) && !file(&self.after) {
            return Ok(format!("{}: {}\n", self.path, self.said()));
        }
        let before_at = workspace.join(&self.path);
        let old = bytes(&self.before, Some(&before_at))?;
        let new = bytes(&self.after, self.after_at.as_deref())?;
        let mut out = String::new();
        if self.kind() == Kind::ModeChanged {
            out.push_str(&format!("{}: {}\n", self.path, self.said()));
            return Ok(out);
        }
        out.push_str(&crate::workspace::diff::unified(&self.path, old.as_deref(), new.as_deref()));
        Ok(out)
    }

    /// "created", "deleted", "mode 644 → 755", "now a symlink to ../x".
    pub fn said(&self) -> String {
        let mode = |n: &Option<Node>| match n {
            Some(Node::File { mode, .. } | Node::Dir { mode }) => Some(*mode),
            _ => None,
        };
        match (self.kind(), &self.after) {
            (Kind::Created, Some(Node::Dir { .. })) => "directory created".into(),
            (Kind::Deleted, _) if matches!(self.before, Some(Node::Dir { .. })) => {
                "directory deleted".into()
            }
            (Kind::Created | Kind::Changed, Some(Node::Symlink { target })) => {
                format!("now a symlink to {target}")
            }
            (Kind::ModeChanged, _) => format!(
                "mode {:o} → {:o}",
                mode(&self.before).unwrap_or(0),
                mode(&self.after).unwrap_or(0)
            ),
            (Kind::Created, _) => "created".into(),
            (Kind::Deleted, _) => "deleted".into(),
            (Kind::Changed, _) => "changed".into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StagedError {
    #[error("the staged layer at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the staged layer's export is not one Reins wrote: {0}")]
    Export(String),
    #[error("the staged layer names {0}, which is not a path inside the workspace")]
    Path(String),
    #[error("staging needs the confinement helper, and this process has none")]
    NoHelper,
    #[error("the command was not staged: {0}")]
    NotStaged(String),
    /// A file is no longer as it was when the command was staged: stage it again.
    #[error("{0} changed since the command was staged")]
    Moved(String),
}

impl StagedError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// A staged run's effects on the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Staged {
    /// How the view was made ("overlay in a user namespace").
    pub mode: String,
    pub setup_micros: u64,
    /// The layer reached its size cap: the command's later writes failed, so what it did is
    /// not all it would have done.
    pub full: bool,
    pub cap_bytes: u64,
    /// Sorted by path.
    pub changes: Vec<Change>,
    /// What the layer holds that no change is made of (devices, sockets, names not UTF-8).
    pub skipped: Vec<String>,
    /// Protected paths (`.git/hooks`, `.vscode`, …) the command wrote in the layer: never
    /// applied, and each one a refused attempt.
    pub protected: Vec<String>,
    /// The host names it looked up, each an attempt to reach that host (the view's name server
    /// answered that none exists).
    pub looked_up: Vec<String>,
}

impl Staged {
    /// Reads the export the helper left in `out`, against `workspace` as it is now.
    pub fn read(out: &Path, workspace: &Path) -> Result<Self, StagedError> {
        let file = out.join(EXPORT_FILE);
        let text = std::fs::read(&file).map_err(|e| StagedError::io(&file, e))?;
        let export: Export =
            serde_json::from_slice(&text).map_err(|e| StagedError::Export(e.to_string()))?;
        let mut changes: BTreeMap<String, Change> = BTreeMap::new();
        let mut skipped = export.unreadable.clone();
        let upper: std::collections::BTreeSet<&str> =
            export.entries.iter().map(Entry::path).collect();
        for entry in &export.entries {
            let path = entry.path();
            let rel = relative(path)?;
            let lower = workspace.join(rel);
            let before = node_at(&lower)?;
            let (after, after_at) = match entry {
                Entry::File { mode, blob, .. } => {
                    if !blob.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(StagedError::Export(format!("blob name {blob}")));
                    }
                    let at = out.join(BLOBS).join(blob);
                    let bytes = std::fs::read(&at).map_err(|e| StagedError::io(&at, e))?;
                    let node = Node::File {
                        sha256: Digest::of(&bytes),
                        size: bytes.len() as u64,
                        mode: *mode,
                    };
                    (Some(node), Some(at))
                }
                Entry::Symlink { target, .. } => (
                    Some(Node::Symlink {
                        target: target.clone(),
                    }),
                    None,
                ),
                Entry::Dir { mode, opaque, .. } => {
                    if *opaque || !matches!(before, Some(Node::Dir { .. })) {
                        // Everything the workspace had under it that the layer does not.
                        for gone in below(&lower, path)? {
                            if !upper.contains(gone.0.as_str()) {
                                changes.insert(gone.0.clone(), deleted(gone.0, gone.1));
                            }
                        }
                    }
                    (Some(Node::Dir { mode: *mode }), None)
                }
                Entry::Whiteout { .. } => {
                    for gone in below(&lower, path)? {
                        changes.insert(gone.0.clone(), deleted(gone.0, gone.1));
                    }
                    (None, None)
                }
                Entry::Other { .. } => {
                    skipped.push(path.to_owned());
                    continue;
                }
            };
            if before == after {
                continue;
            }
            changes.insert(
                path.to_owned(),
                Change {
                    path: path.to_owned(),
                    before,
                    after,
                    after_at,
                },
            );
        }
        let (protected, changes): (Vec<Change>, Vec<Change>) =
            changes.into_values().partition(|c| is_protected(&c.path));
        Ok(Self {
            mode: export.mode,
            setup_micros: export.setup_micros,
            full: export.full,
            cap_bytes: export.cap_bytes,
            changes,
            skipped,
            protected: deepest(protected.into_iter().map(|c| c.path).collect()),
            looked_up: export.looked_up,
        })
    }

    /// Files (and symlinks) changed, created and deleted; directories are counted with neither.
    pub fn counts(&self) -> (usize, usize, usize) {
        tally(self.changes.iter().filter(|c| !c.is_dir()))
    }

    /// "changes 3 files, creates 1, deletes none; no network used", with what the kernel refused
    /// it (`refused`: the lines of its output that say so) and a full layer.
    pub fn summary(&self, refused: &[String]) -> String {
        let (changed, created, deleted) = self.counts();
        let files = |n: usize| match n {
            0 => "none".to_owned(),
            1 => "1 file".to_owned(),
            n => format!("{n} files"),
        };
        let count = |n: usize| match n {
            0 => "none".to_owned(),
            n => n.to_string(),
        };
        let mut out = if changed + created + deleted == 0 {
            "changes nothing in the workspace".to_owned()
        } else {
            format!(
                "changes {}, creates {}, deletes {}",
                files(changed),
                count(created),
                count(deleted)
            )
        };
        let network = refused.iter().any(|l| network_line(l));
        out.push_str(&match self.looked_up.as_slice() {
            [] if network => "; tried the network, which staging does not give".to_owned(),
            [] => "; no network used".to_owned(),
            names => format!("; tried to reach {}, which staging does not give", hosts(names)),
        });
        let other = refused.iter().filter(|l| !network_line(l)).count();
        if other > 0 {
            out.push_str(&format!("; {other} other access refused"));
        }
        if self.full {
            out.push_str(&format!(
                "; stopped at the layer's size cap ({} MiB)",
                self.cap_bytes / (1024 * 1024)
            ));
        }
        out
    }

    /// Whether the staged run saw everything it needed: no refusal, no full layer, nothing
    /// skipped. If not, what it did is not all it would do, and the person is told so.
    pub fn whole(&self, refused: &[String]) -> bool {
        refused.is_empty() && !self.full && self.skipped.is_empty() && self.protected.is_empty()
    }
}

/// Changes counted as changed (a mode among them), created and deleted.
fn tally<'a>(changes: impl Iterator<Item = &'a Change>) -> (usize, usize, usize) {
    let mut n = (0, 0, 0);
    for c in changes {
        match c.kind() {
            Kind::Changed | Kind::ModeChanged => n.0 += 1,
            Kind::Created => n.1 += 1,
            Kind::Deleted => n.2 += 1,
        }
    }
    n
}

/// The deepest paths only: `.vscode/tasks.json` says `.vscode` was made too.
fn deepest(paths: Vec<String>) -> Vec<String> {
    paths
        .iter()
        .filter(|p| !paths.iter().any(|q| q.starts_with(&format!("{p}/"))))
        .cloned()
        .collect()
}

/// A path at or below one a command may never write, whatever it was approved for.
fn is_protected(path: &str) -> bool {
    crate::contain::profile::PROTECTED_IN_WORKSPACE
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")))
}

/// "a.org", "a.org and b.org", "a.org, b.org and 3 more".
fn hosts(names: &[String]) -> String {
    match names {
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [a, b, rest @ ..] => format!("{a}, {b} and {} more", rest.len()),
        [] => String::new(),
    }
}

/// A line of a program's output that says a host name did not resolve: said better by the name
/// it looked up, when the view's name server heard it.
pub(crate) fn lookup_line(line: &str) -> bool {
    const LOOKUP: &[&str] = &[
        "resolve",
        "name resolution",
        "Name or service not known",
        "getaddrinfo",
        "ENOTFOUND",
        "EAI_AGAIN",
        "gaierror",
    ];
    LOOKUP.iter().any(|n| line.contains(n))
}

pub(crate) fn network_line(line: &str) -> bool {
    const NET: &[&str] = &[
        "tried to reach",
        "Network is unreachable",
        "Could not resolve",
        "Temporary failure in name resolution",
        "Name or service not known",
        "getaddrinfo",
        "ENOTFOUND",
        "EAI_AGAIN",
        "Couldn't connect",
        "Failed to connect",
    ];
    NET.iter().any(|n| line.contains(n))
}

fn deleted(path: String, before: Node) -> Change {
    Change {
        path,
        before: Some(before),
        after: None,
        after_at: None,
    }
}

/// A layer path as a relative path inside the workspace: no `..`, no root, nothing empty.
fn relative(path: &str) -> Result<&Path, StagedError> {
    let p = Path::new(path);
    let plain = !path.is_empty()
        && p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if plain {
        Ok(p)
    } else {
        Err(StagedError::Path(path.to_owned()))
    }
}

/// What is at `path` in the workspace, not following a symlink; None when nothing is.
fn node_at(path: &Path) -> Result<Option<Node>, StagedError> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Ok(None),
        Err(e) => return Err(StagedError::io(path, e)),
    };
    let t = meta.file_type();
    Ok(Some(if t.is_dir() {
        Node::Dir {
            mode: meta.mode() & 0o7777,
        }
    } else if t.is_symlink() {
        let target = std::fs::read_link(path).map_err(|e| StagedError::io(path, e))?;
        Node::Symlink {
            target: target.to_string_lossy().into_owned(),
        }
    } else {
        let bytes = std::fs::read(path).map_err(|e| StagedError::io(path, e))?;
        Node::File {
            sha256: Digest::of(&bytes),
            size: meta.len(),
            mode: meta.mode() & 0o7777,
        }
    }))
}

/// What the workspace has at `path` and below (children before their directory), by layer path.
fn below(at: &Path, path: &str) -> Result<Vec<(String, Node)>, StagedError> {
    let Some(node) = node_at(at)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    if matches!(node, Node::Dir { .. }) {
        let mut names: Vec<_> = std::fs::read_dir(at)
            .map_err(|e| StagedError::io(at, e))?
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        names.sort();
        for name in names {
            let Some(name) = name.to_str() else {
                continue;
            };
            out.extend(below(&at.join(name), &format!("{path}/{name}"))?);
        }
    }
    out.push((path.to_owned(), node));
    Ok(out)
}
