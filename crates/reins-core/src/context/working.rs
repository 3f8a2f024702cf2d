//! Working memory: the run's goal, constraints, what is done and what is pending, and the artifacts
//! it made. Part of the agent's state, so it is in every checkpoint; the prompt's hard layer and the
//! review card's context summary are built from it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkingMemory {
    pub goal: String,
    #[serde(default)]
    pub constraints: Vec<String>,
    /// What the model last said it is doing (its reason for the calls that follow).
    #[serde(default)]
    pub intent: Option<String>,
    #[serde(default)]
    pub done: Vec<DoneStep>,
    /// Calls the model made that have not run yet.
    #[serde(default)]
    pub pending: Vec<String>,
    /// Notes the harness added (a resume's recovery summary).
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoneStep {
    pub step: i64,
    pub tool: String,
    pub status: String,
    pub summary: String,
    /// Where a large result is kept whole (`step:N`: the step journal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
}

/// How many done steps the prompt lists one by one (older ones are counted).
pub const LISTED_STEPS: usize = 30;

impl WorkingMemory {
    /// The text the model sees.
    pub fn render(&self) -> String {
        self.render_with(&self.done)
    }

    /// As [`WorkingMemory::render`], with `done` for the steps done (an agent that keeps them
    /// apart need not copy them all for each call).
    pub fn render_with(&self, done: &[DoneStep]) -> String {
        let mut s = String::from("Working memory (kept by the harness):\n");
        for c in &self.constraints {
            s.push_str(&format!("- constraint: {c}\n"));
        }
        let skipped = done.len().saturating_sub(LISTED_STEPS);
        if skipped > 0 {
            s.push_str(&format!("- {skipped} earlier step(s) done\n"));
        }
        for d in done.iter().skip(skipped) {
            s.push_str(&format!(
                "- step {} {} {}: {}{}\n",
                d.step,
                d.tool,
                d.status,
                d.summary,
                d.artifact
                    .as_deref()
                    .map(|a| format!(" (whole output: {a})"))
                    .unwrap_or_default()
            ));
        }
        if done.is_empty() {
            s.push_str("- nothing done yet\n");
        }
        if !self.pending.is_empty() {
            s.push_str(&format!("- still to run: {}\n", self.pending.join(", ")));
        }
        for n in &self.notes {
            s.push_str(&format!("- note: {n}\n"));
        }
        s
    }

    /// One line per done step, newest last, for a review card.
    pub fn recent(&self, n: usize) -> Vec<String> {
        let skip = self.done.len().saturating_sub(n);
        self.done
            .iter()
            .skip(skip)
            .map(|d| format!("step {} {} {}: {}", d.step, d.tool, d.status, d.summary))
            .collect()
    }
}
