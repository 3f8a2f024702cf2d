//! The effect journal's vocabulary and its one pure decision: how a pending file intent settles after a
//! restart, from the file's current bytes and the recorded pre- and post-image hashes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;

/// How an effect behaves when it runs twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum EffectClass {
    /// No side effect.
    Pure,
    /// Running it again gives the same world.
    Idempotent,
    /// Must never run twice without a human saying so.
    AtMostOnce,
}

impl std::fmt::Display for EffectClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl EffectClass {
    pub fn as_str(self) -> &'static str {
        match self {
            EffectClass::Pure => "pure",
            EffectClass::Idempotent => "idempotent",
            EffectClass::AtMostOnce => "at_most_once",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum IntentStatus {
    Pending,
    Confirmed,
    BusinessFailed,
    Unknown,
    Skipped,
}

impl IntentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            IntentStatus::Pending => "pending",
            IntentStatus::Confirmed => "confirmed",
            IntentStatus::BusinessFailed => "business_failed",
            IntentStatus::Unknown => "unknown",
            IntentStatus::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for IntentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A file's state: its sha256, or None when it does not exist.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FileImage {
    pub path: String,
    pub sha256: Option<Digest>,
    /// In a pre-image: the identity (`dev:ino`) of the folder holding the file when the effect was
    /// checked; None when it did not exist yet (or for a journal written before this was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
}

impl FileImage {
    /// The same file state: path and content, and the same folder where both know theirs.
    pub fn same_as(&self, other: &FileImage) -> bool {
        self.path == other.path
            && self.sha256 == other.sha256
            && (self.dir.is_none() || other.dir.is_none() || self.dir == other.dir)
    }

    /// Whether two lists of images describe the same states, in order.
    pub fn all_same(a: &[FileImage], b: &[FileImage]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_as(y))
    }
}

/// What the disk says about a pending file intent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Settlement {
    /// Every touched path already holds its post-image: the effect happened; confirm it.
    Done,
    /// Every touched path still holds its pre-image: the effect did not happen; run it.
    NotDone,
    /// Neither: something else changed the files. A human decides.
    Diverged,
}

pub fn settle_files(
    pre: &[FileImage],
    post: &[FileImage],
    current: &BTreeMap<String, Option<Digest>>,
) -> Settlement {
    let matches = |images: &[FileImage]| {
        images.iter().all(|img| {
            current
                .get(&img.path)
                .map(|c| c == &img.sha256)
                .unwrap_or(false)
        })
    };
    if matches(post) {
        Settlement::Done
    } else if matches(pre) {
        Settlement::NotDone
    } else {
        Settlement::Diverged
    }
}

/// What a person decided about an effect whose outcome nobody could know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// It happened: the agent is told the result it would have got.
    Done,
    /// Run it again: the step is proposed and executed afresh (new pre-images, new intent).
    Retry,
    /// Do not run it: the agent is told it was skipped.
    Skip,
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn img(path: &str, bytes: Option<&[u8]>) -> FileImage {
        FileImage {
            dir: None,
            path: path.into(),
            sha256: bytes.map(Digest::of),
        }
    }

    fn now(state: &[(&str, Option<&[u8]>)]) -> BTreeMap<String, Option<Digest>> {
        state
            .iter()
            .map(|(p, b)| ((*p).to_owned(), b.map(Digest::of)))
            .collect()
    }

    #[rstest]
    #[case::write_not_done(&[("a", Some(b"old" as &[u8]))], Settlement::NotDone)]
    #[case::write_done(&[("a", Some(b"new" as &[u8]))], Settlement::Done)]
    #[case::write_diverged(&[("a", Some(b"other" as &[u8]))], Settlement::Diverged)]
    #[case::write_deleted_since(&[("a", None)], Settlement::Diverged)]
    fn a_write(#[case] state: &[(&str, Option<&[u8]>)], #[case] expected: Settlement) {
        let pre = [img("a", Some(b"old"))];
        let post = [img("a", Some(b"new"))];
        assert_eq!(settle_files(&pre, &post, &now(state)), expected);
    }

    #[rstest]
    #[case::not_done(&[("from", Some(b"x" as &[u8])), ("to", None)], Settlement::NotDone)]
    #[case::done(&[("from", None), ("to", Some(b"x" as &[u8]))], Settlement::Done)]
    #[case::both_present(&[("from", Some(b"x" as &[u8])), ("to", Some(b"x" as &[u8]))], Settlement::Diverged)]
    fn a_move(#[case] state: &[(&str, Option<&[u8]>)], #[case] expected: Settlement) {
        let pre = [img("from", Some(b"x")), img("to", None)];
        let post = [img("from", None), img("to", Some(b"x"))];
        assert_eq!(settle_files(&pre, &post, &now(state)), expected);
    }
}
