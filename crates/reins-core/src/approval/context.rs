//! The context summary on a review card: what the run is for, what it has done, why the agent wants
//! this action, and what it has read — so a person can judge the action without reading the log.

use serde::{Deserialize, Serialize};

use crate::context::working::WorkingMemory;

/// What the journal says of a run before the step under review, for its summary.
#[derive(Clone, Debug, Default)]
pub struct Journal {
    /// Tool steps finished before it.
    pub steps_done: i64,
    /// The last few steps, one line each (newest last).
    pub recent: Vec<String>,
    /// The canonical actions of the reads and listings before it, newest first.
    pub reads: Vec<String>,
    /// The profile facts the latest model call used.
    pub facts_used: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ContextSummary {
    pub goal: String,
    /// Steps finished before this one.
    pub steps_done: i64,
    /// The last few steps, one line each.
    pub recent: Vec<String>,
    /// The agent's stated reason for this action.
    pub why: Option<String>,
    /// Paths the run has read or listed (newest first, at most 20).
    pub read: Vec<String>,
    /// Ids of the profile facts the agent's latest model call used. Ids only: this summary is kept
    /// with the approval and in the audit log, and a deleted fact must leave no trace of its text;
    /// readers resolve the ids to the facts' current text.
    #[serde(default)]
    pub memory: Vec<String>,
    /// Calls the agent made that wait behind this one (from its working memory).
    #[serde(default)]
    pub pending: Vec<String>,
    /// Constraints the run works under (from its working memory).
    #[serde(default)]
    pub constraints: Vec<String>,
}

impl ContextSummary {
    /// From the agent's working memory when it keeps one (the LLM agent), else from what the
    /// journal says of the run so far.
    pub fn new(
        goal: &str,
        why: Option<&str>,
        working: Option<&WorkingMemory>,
        journal: Journal,
    ) -> Self {
        let recent = match working {
            Some(w) => w.recent(5),
            None => journal.recent,
        };
        let mut read: Vec<String> = Vec::new();
        for a in journal.reads {
            let path = serde_json::from_str::<serde_json::Value>(&a)
                .ok()
                .and_then(|v| v["args"]["path"].as_str().map(str::to_owned));
            if let Some(p) = path {
                if !read.contains(&p) {
                    read.push(p);
                    if read.len() == 20 {
                        break;
                    }
                }
            }
        }
        Self {
            goal: goal.into(),
            steps_done: journal.steps_done,
            recent,
            why: why.map(str::to_owned),
            read,
            memory: journal.facts_used,
            pending: working.map(|w| w.pending.clone()).unwrap_or_default(),
            constraints: working.map(|w| w.constraints.clone()).unwrap_or_default(),
        }
    }

    /// The summary as a few lines of plain text.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "Goal: {}\nProgress: {} steps done",
            self.goal, self.steps_done
        );
        for r in &self.recent {
            s.push_str(&format!("\n  {r}"));
        }
        s.push_str(&format!(
            "\nWhy (the agent's words): {}",
            self.why.as_deref().unwrap_or("(the agent gave no reason)")
        ));
        if !self.pending.is_empty() {
            s.push_str(&format!(
                "\nStill to run after this: {}",
                self.pending.join(", ")
            ));
        }
        for c in &self.constraints {
            s.push_str(&format!("\nConstraint: {c}"));
        }
        if !self.read.is_empty() {
            s.push_str(&format!("\nHas read: {}", self.read.join(", ")));
        }
        s
    }
}
