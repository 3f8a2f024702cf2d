//! The agent's history in the journal: entries written once, with the first checkpoint that covers
//! them, and read back (checked against that checkpoint's chained digest) when a run resumes. A
//! checkpoint holds a [`HistoryRef`], so its size does not grow with the run.

use crate::agent::{Agent, StepOutputs};
use crate::checkpoint::HistoryRef;
use crate::error::Result;
use crate::ids::RunId;
use crate::store::{history, steps};

use super::drive::Drive;
use super::Engine;

impl Drive<'_> {
    /// The agent's entries since the last checkpoint, chained into the checkpoint's reference:
    /// (index of the first, their JSON), or None when there are none.
    pub(super) fn new_history(&mut self) -> Option<(i64, Vec<String>)> {
        let conversation = self.agent.conversation()?;
        let len = conversation.history_len();
        if len == 0 && self.cp.history.is_none() {
            return None;
        }
        let mut at = self.cp.history.clone().unwrap_or_else(HistoryRef::empty);
        let from = usize::try_from(at.len).unwrap_or(usize::MAX);
        let entries: Vec<String> = conversation
            .history_since(from)
            .iter()
            .map(|v| serde_json::to_string(v).unwrap_or_default())
            .collect();
        for entry in &entries {
            at = at.then(entry);
        }
        self.cp.history = Some(at);
        (!entries.is_empty()).then(|| (i64::try_from(from).unwrap_or(i64::MAX), entries))
    }
}

impl Engine {
    /// Gives `agent` the history `at` stands on, read from the journal and checked against its
    /// chained digest; or why it cannot be.
    pub(super) async fn restore_history(
        &self,
        run: RunId,
        at: &HistoryRef,
        agent: &mut dyn Agent,
    ) -> Result<std::result::Result<(), String>> {
        let len = i64::try_from(at.len).unwrap_or(i64::MAX);
        let rows = history::first(self.store.pool(), run, len).await?;
        let mut chain = HistoryRef::empty();
        let mut entries = Vec::with_capacity(rows.len());
        for (idx, sealed) in rows {
            if idx != i64::try_from(chain.len).unwrap_or(i64::MAX) {
                return Ok(Err(format!("entry {} of its history is missing", chain.len)));
            }
            let text = self
                .opened_text(&sealed, &format!("entry {idx} of the agent's history"))
                .await?;
            chain = chain.then(&text);
            match serde_json::from_str(&text) {
                Ok(v) => entries.push(v),
                Err(e) => return Ok(Err(format!("entry {idx} of its history: {e}"))),
            }
        }
        if chain.len != at.len {
            return Ok(Err(format!(
                "its history has {} of the {} entries the checkpoint stands on",
                chain.len, at.len
            )));
        }
        if chain.chain != at.chain {
            return Ok(Err(
                "its history in the journal is not the one the checkpoint stands on (the digests differ)"
                    .into(),
            ));
        }
        let outputs = if entries.is_empty() {
            StepOutputs::default()
        } else {
            self.step_outputs(run).await?
        };
        match agent.conversation() {
            Some(c) => Ok(c
                .restore_history(entries, &outputs)
                .map_err(|e| e.to_string())),
            None if entries.is_empty() => Ok(Ok(())),
            None => Ok(Err(format!(
                "{} history entries for an agent that keeps none",
                entries.len()
            ))),
        }
    }

    /// What the run's agent observed of its steps, as the journal keeps it (opened when sealed).
    async fn step_outputs(&self, run: RunId) -> Result<StepOutputs> {
        let mut by_seq = std::collections::BTreeMap::new();
        for (seq, result) in steps::outputs(self.store.pool(), run).await? {
            let text = self
                .opened_text(&result, &format!("step {seq}'s result"))
                .await?;
            by_seq.insert(seq, text);
        }
        Ok(StepOutputs::new(by_seq))
    }
}
