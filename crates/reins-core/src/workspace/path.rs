//! `RelPath`: a path the agent gave, checked lexically — relative, no `..`, no NUL — and normalised to
//! `/`-separated components. Whether it stays beneath the root on disk is the jail's job.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::JailError;

pub const MAX_PATH_BYTES: usize = 4096;

/// A normalised relative path; the empty path is the workspace root (shown and serialised as ".").
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

impl Serialize for RelPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(if self.0.is_empty() { "." } else { &self.0 })
    }
}

impl RelPath {
    pub fn parse(raw: &str) -> Result<Self, JailError> {
        let reject = |why: &'static str| JailError::Invalid {
            path: raw.chars().take(200).collect(),
            why,
        };
        if raw.contains('\0') {
            return Err(reject("contains a NUL byte"));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(reject("is longer than 4096 bytes"));
        }
        let mut parts: Vec<&str> = Vec::new();
        for component in Path::new(raw).components() {
            match component {
                Component::Normal(part) => {
                    parts.push(part.to_str().ok_or_else(|| reject("is not valid UTF-8"))?)
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(reject(
                        "climbs out with `..`; use a path inside the workspace",
                    ))
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(reject(
                        "is absolute; give a path relative to the workspace root",
                    ))
                }
            }
        }
        Ok(Self(parts.join("/")))
    }

    pub fn root() -> Self {
        Self(String::new())
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path for the OS, relative to the root; "." for the root itself.
    pub fn as_os(&self) -> PathBuf {
        if self.0.is_empty() {
            PathBuf::from(".")
        } else {
            PathBuf::from(&self.0)
        }
    }

    pub fn parent(&self) -> RelPath {
        match self.0.rsplit_once('/') {
            Some((parent, _)) => RelPath(parent.to_owned()),
            None => RelPath::root(),
        }
    }

    pub fn file_name(&self) -> &str {
        self.0
            .rsplit_once('/')
            .map(|(_, name)| name)
            .unwrap_or(&self.0)
    }

    pub fn join(&self, name: &str) -> RelPath {
        if self.0.is_empty() {
            RelPath(name.to_owned())
        } else {
            RelPath(format!("{}/{}", self.0, name))
        }
    }

    /// The names in order: `a`, `b`, `c` for `a/b/c`; none for the root.
    pub fn components(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.split('/').filter(|part| !part.is_empty())
    }

    /// Each prefix: `a`, `a/b`, `a/b/c`.
    pub fn prefixes(&self) -> impl Iterator<Item = RelPath> + '_ {
        let parts: Vec<&str> = if self.0.is_empty() {
            Vec::new()
        } else {
            self.0.split('/').collect()
        };
        (1..=parts.len()).map(move |n| RelPath(parts[..n].join("/")))
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str(".")
        } else {
            f.write_str(&self.0)
        }
    }
}
