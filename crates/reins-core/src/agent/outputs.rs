//! What the journal keeps of the steps an agent observed: each step's output is its result in the
//! `steps` table, so an agent's history may name the step instead of carrying a second copy, and
//! gets the output back from here when a run resumes.

use std::collections::BTreeMap;

use super::{Observation, ARTIFACT_BYTES};
use crate::digest::Digest;

/// Whether the harness keeps `output` whole in the blob store as well (an agent then hands the
/// model a part of it and the reference): large, and holding no secret (the blob store is not
/// sealed; such an output is kept only in the journal, sealed there).
pub fn has_artifact(output: &str) -> bool {
    output.len() > ARTIFACT_BYTES && !crate::secrets::contains(output)
}

/// The outputs of a run's steps, by seq, as the journal keeps them (opened when sealed).
#[derive(Debug, Default)]
pub struct StepOutputs {
    by_seq: BTreeMap<i64, String>,
}

impl StepOutputs {
    pub fn new(by_seq: BTreeMap<i64, String>) -> Self {
        Self { by_seq }
    }

    /// Step `seq`'s output, or None when the journal has no result for it.
    pub fn get(&self, seq: i64) -> Option<&str> {
        self.by_seq.get(&seq).map(String::as_str)
    }

    /// Step `seq` as the agent was told it: its output, and the artifact when it has one.
    pub fn observation(&self, seq: i64, tool: &str, ok: bool) -> Option<Observation> {
        let output = self.get(seq)?;
        Some(Observation {
            seq,
            tool: tool.to_owned(),
            ok,
            output: output.to_owned(),
            ran: None,
            artifact: has_artifact(output).then(|| Digest::of(output.as_bytes())),
        })
    }
}
