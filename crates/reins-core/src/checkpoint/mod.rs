//! Checkpoints: versioned payloads, canonical bytes with a SHA-256 beside them, and the pure rule that
//! picks the recovery point — the highest seq of the longest contiguous, checksum-valid prefix.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;

mod recovery;
pub use recovery::{
    recovery_point_after, recovery_point_past, Damage, DamageKind, Health, RecoveryAnalysis,
};

/// The checkpoint schema this build writes. 2: the agent's append-only history (an LLM's
/// conversation) is in the journal and the checkpoint holds a reference to it ([`HistoryRef`]);
/// 1 held it in the agent's state. Both are read.
pub const SCHEMA_VERSION: i64 = 2;

/// Payloads larger than this go to the blob store; the row keeps the hash.
pub const INLINE_LIMIT: usize = 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "CheckpointLevel")]
pub enum Level {
    /// Run start and end.
    Task,
    /// After a step completed.
    Step,
    /// Within a step (between tool calls of one model turn).
    Tool,
    /// Parked for a human review.
    Review,
    /// The files as they were just before a rollback, so the rollback can be undone.
    Snapshot,
    /// The files as a rollback restored them.
    Rollback,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Task => "task",
            Level::Step => "step",
            Level::Tool => "tool",
            Level::Review => "review",
            Level::Snapshot => "snapshot",
            Level::Rollback => "rollback",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "version", content = "data")]
pub enum Payload {
    /// The agent's history, if any, inside its state (`history` is absent).
    V1(Checkpoint),
    V2(Checkpoint),
}

impl Payload {
    /// The current-version view of any stored version.
    pub fn into_current(self) -> Checkpoint {
        match self {
            Payload::V1(v) | Payload::V2(v) => v,
        }
    }
}

/// How many of the latest completed steps a checkpoint carries: the journal (the `steps` table) is
/// the record of them all, and a checkpoint's size must not grow with the run, since resuming
/// verifies every checkpoint.
pub const RECENT_STEPS: usize = 1;

/// What a run needs to continue from here. Its size does not grow with the run: what only grows
/// (the steps, the agent's history) is in the journal, and the checkpoint says how much of it it
/// stands on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    // Execution context
    pub goal: String,
    /// The latest completed steps, at most `RECENT_STEPS` (the journal has every one).
    pub completed: Vec<ToolRecord>,
    /// The step in flight when this checkpoint was written (a review waits on it), if any.
    pub current_step: Option<i64>,
    /// The seq the next proposed step gets.
    pub next_step: i64,
    /// The agent's own serialised state.
    pub agent: serde_json::Value,
    /// The agent's history in the journal this checkpoint stands on (none: it keeps none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryRef>,
    // Environment: every file the run touched → its sha256 after this checkpoint (None: absent).
    pub files: BTreeMap<String, Option<Digest>>,
    /// The blob holding the workspace fingerprint taken when the current attempt began: the
    /// baseline for telling what changed outside the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<Digest>,
    pub meta: Meta,
}

/// How much of a run's agent history (`agent_history` rows 0..len) a checkpoint stands on, and
/// the digest chained over those entries, which restoring checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryRef {
    pub len: u64,
    pub chain: Digest,
}

impl HistoryRef {
    pub fn empty() -> Self {
        Self {
            len: 0,
            chain: Digest::of(b"reins agent history"),
        }
    }

    /// The reference after `entry` (its canonical JSON) is appended.
    pub fn then(&self, entry: &str) -> Self {
        let mut bytes = Vec::with_capacity(self.chain.as_str().len() + 1 + entry.len());
        bytes.extend_from_slice(self.chain.as_str().as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(entry.as_bytes());
        Self {
            len: self.len + 1,
            chain: Digest::of(&bytes),
        }
    }
}

/// One completed tool call, as a later resume needs to know it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolRecord {
    pub seq: i64,
    pub tool: String,
    pub action_hash: String,
    pub status: String,
    pub result_sha256: Digest,
    /// The first line of the result, for people.
    pub summary: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub attempt: i64,
    pub fence: i64,
    pub written_at: i64,
    pub note: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint {seq}: checksum mismatch (stored {stored}, bytes hash to {actual})")]
    Checksum {
        seq: i64,
        stored: String,
        actual: Digest,
    },
    #[error("checkpoint {seq}: cannot decode payload: {detail}")]
    Decode { seq: i64, detail: String },
    #[error("checkpoint {seq}: schema version {found} is newer than this Reins knows ({known})")]
    NewerSchema { seq: i64, found: i64, known: i64 },
}

/// The current version, borrowed: serialises exactly like `Payload::V2` without copying the payload.
#[derive(Serialize)]
#[serde(tag = "version", content = "data")]
enum PayloadRef<'a> {
    V2(&'a Checkpoint),
}

/// Canonical bytes: serde_json with struct fields in declaration order and maps sorted (BTreeMap,
/// and serde_json's own map is sorted), so equal payloads always give equal bytes and hashes.
pub fn encode(cp: &Checkpoint) -> (Vec<u8>, Digest) {
    let bytes = serde_json::to_vec(&PayloadRef::V2(cp)).unwrap_or_default();
    let digest = Digest::of(&bytes);
    (bytes, digest)
}

/// Verifies the checksum, then decodes.
pub fn decode(
    seq: i64,
    schema_version: i64,
    bytes: &[u8],
    stored_sha256: &str,
) -> Result<Payload, CheckpointError> {
    let actual = Digest::of(bytes);
    if actual.as_str() != stored_sha256 {
        return Err(CheckpointError::Checksum {
            seq,
            stored: stored_sha256.to_owned(),
            actual,
        });
    }
    if schema_version > SCHEMA_VERSION {
        return Err(CheckpointError::NewerSchema {
            seq,
            found: schema_version,
            known: SCHEMA_VERSION,
        });
    }
    serde_json::from_slice(bytes).map_err(|e| CheckpointError::Decode {
        seq,
        detail: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing: serde_json's fast float parsing can be one unit off in the last place,
    /// so a number in an agent's state came back different after a checkpoint (and anything hashed
    /// from it with it). `float_roundtrip` parses exactly.
    #[test]
    fn numbers_in_agent_state_come_back_exactly() {
        // As an agent's state might hold them: integers too big for u64 become floats.
        let text = r#"{"version":"V1","data":{"goal":"g","completed":[],"current_step":null,"next_step":1,
            "agent":{"next":1111111111111111111111111,"big":13333333333333333333333333333333333332333333333332,"t":0.7},
            "files":{},"workspace":null,"meta":{"attempt":1,"fence":1,"written_at":0,"note":""}}}"#;
        let stored = Digest::of(text.as_bytes());
        let Ok(Payload::V1(cp)) = decode(1, 1, text.as_bytes(), stored.as_str()) else {
            panic!("the payload decodes");
        };
        let (bytes, digest) = encode(&cp);
        let Ok(Payload::V2(back)) = decode(1, 2, &bytes, digest.as_str()) else {
            panic!("an encoded checkpoint decodes");
        };
        assert_eq!(back, cp);
        assert_eq!(encode(&back).1, digest, "and hashes the same");
    }

    #[test]
    fn canonical_bytes_are_stable_and_verified() {
        let mut files = BTreeMap::new();
        files.insert("b.txt".to_owned(), Some(Digest::of(b"b")));
        files.insert("a.txt".to_owned(), None);
        let cp = Checkpoint {
            goal: "g".into(),
            files,
            next_step: 3,
            ..Default::default()
        };
        let (bytes, digest) = encode(&cp);
        assert_eq!(encode(&cp.clone()).1, digest, "same payload, same hash");
        let p = Payload::V2(cp);
        assert_eq!(
            serde_json::to_vec(&p).ok(),
            Some(bytes.clone()),
            "borrowed and owned encodings agree"
        );
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.starts_with(r#"{"version":"V2","data":{"goal":"g""#),
            "{text}"
        );
        assert!(text.find("a.txt") < text.find("b.txt"), "maps are sorted");
        assert_eq!(
            decode(1, SCHEMA_VERSION, &bytes, digest.as_str()).ok(),
            Some(p)
        );

        let mut flipped = bytes.clone();
        flipped[10] ^= 0x01;
        assert!(matches!(
            decode(1, 2, &flipped, digest.as_str()),
            Err(CheckpointError::Checksum { .. })
        ));
        assert!(matches!(
            decode(1, 99, &bytes, digest.as_str()),
            Err(CheckpointError::NewerSchema { .. })
        ));
    }
}
