//! The run summary: a condensed account of the conversation so far, replaced as the run goes on.
//! Each carries a version and the id of the last message it covers; a summary that arrives late (an
//! earlier summarisation finishing after a later one, a retried call) never replaces a newer one.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub version: u32,
    /// The id of the last message it covers.
    pub covers_through: String,
    /// That message's position in the conversation.
    pub covers_seq: u64,
    pub text: String,
}

/// Puts `candidate` in place of `current` when it is newer — a higher version that covers at least
/// as much; true when it did.
pub fn adopt(current: &mut Option<Summary>, candidate: Summary) -> bool {
    let newer = current
        .as_ref()
        .is_none_or(|c| candidate.version > c.version && candidate.covers_seq >= c.covers_seq);
    if newer {
        *current = Some(candidate);
    }
    newer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(version: u32, covers_seq: u64) -> Summary {
        Summary {
            version,
            covers_through: format!("m{covers_seq}"),
            covers_seq,
            text: format!("v{version}"),
        }
    }

    #[test]
    fn an_older_summary_never_replaces_a_newer_one() {
        let mut current = None;
        assert!(adopt(&mut current, s(1, 10)));
        assert!(adopt(&mut current, s(3, 30)));
        assert!(!adopt(&mut current, s(2, 20)), "late arrival");
        assert!(!adopt(&mut current, s(3, 31)), "same version");
        assert!(!adopt(&mut current, s(4, 25)), "covers less");
        assert_eq!(current.map(|c| c.version), Some(3));
    }
}
