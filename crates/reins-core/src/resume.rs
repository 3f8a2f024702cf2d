//! The recovery summary: what a resumed agent (and the person reading `reins show`) is told about
//! where the run stands — structured, plus a short paragraph in plain language. A resumed agent that
//! assumes the world is as it left it goes wrong; this says what happened while it was away.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::checkpoint::ToolRecord;
use crate::digest::Digest;
use crate::workspace::fingerprint::{Change, ChangeKind};

/// How an effect left unsettled by the previous attempt was settled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SettledEffect {
    pub step: i64,
    pub tool: String,
    /// confirmed | skipped | unknown
    pub status: String,
    pub how: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RecoverySummary {
    pub attempt: i64,
    /// The checkpoint this attempt continues from.
    pub resumed_from: Option<i64>,
    pub steps_done: i64,
    /// The step that was in flight (waiting for review) when the run stopped, if any.
    pub current_step: Option<i64>,
    pub next_step: i64,
    /// The latest completed steps, newest last.
    pub recent_steps: Vec<ToolRecord>,
    /// Every file the run has touched → its content hash now as the run left it (None: absent).
    pub files: BTreeMap<String, Option<Digest>>,
    /// Why the run stopped last time (a suspension reason, a pause, a lost worker).
    pub last_error: Option<String>,
    pub settled: Vec<SettledEffect>,
    /// Processes an earlier attempt left running, ended before anything ran again.
    #[serde(default)]
    pub ended_processes: Vec<String>,
    /// Files changed by something other than this run since its last attempt began.
    pub changed_outside: Vec<Change>,
    /// The same, in a few plain sentences.
    pub text: String,
}

impl RecoverySummary {
    /// Fills `text` from the structured fields.
    pub fn with_text(mut self) -> Self {
        self.text = describe(&self);
        self
    }

    /// The step this attempt simply goes on with after a person's decision on it (a review or an
    /// answer), when nothing else happened in between: nothing settled after a crash, no process
    /// ended, nothing changed outside the run. None when the run was interrupted.
    pub fn continues_a_decision(&self) -> Option<i64> {
        self.current_step.filter(|_| {
            matches!(
                self.last_error.as_deref(),
                Some("awaiting approval" | "awaiting input")
            ) && self.settled.is_empty()
                && self.ended_processes.is_empty()
                && self.changed_outside.is_empty()
        })
    }

    /// Whether the run was interrupted (a crash, a drain or a pause, damage, changes outside it)
    /// rather than going on after a decision: what a person is shown as a recovery.
    pub fn interrupted(&self) -> bool {
        self.continues_a_decision().is_none()
    }
}

/// "1 step", "3 steps": for sentences people read (the audit log's too).
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A short paragraph for the agent's context and for people.
pub fn describe(s: &RecoverySummary) -> String {
    let mut out = Vec::new();
    let from = s
        .resumed_from
        .map(|seq| format!(" from checkpoint {seq}"))
        .unwrap_or_default();
    out.push(format!(
        "This run is resuming (attempt {}){from}: {} done, the next is step {}.",
        s.attempt,
        plural(u64::try_from(s.steps_done).unwrap_or(0), "step", "steps"),
        s.next_step
    ));
    if let Some(last) = s.recent_steps.last() {
        out.push(format!(
            "The last completed step was #{} {} ({}): {}.",
            last.seq, last.tool, last.status, last.summary
        ));
    }
    if let Some(seq) = s.current_step {
        let what = if s.last_error.as_deref() == Some("awaiting input") {
            "an answer to its question"
        } else {
            "a review"
        };
        out.push(format!("Step {seq} was waiting for {what}."));
    }
    if let Some(err) = &s.last_error {
        out.push(format!("It had stopped because: {err}."));
    }
    for e in &s.settled {
        out.push(format!(
            "Step {} ({}) was {}: {}.",
            e.step, e.tool, e.status, e.how
        ));
    }
    for p in &s.ended_processes {
        out.push(format!("A leftover process was dealt with: {p}."));
    }
    if !s.files.is_empty() {
        out.push(format!(
            "It has touched {} so far.",
            plural(s.files.len() as u64, "file", "files")
        ));
    }
    if s.changed_outside.is_empty() {
        out.push("Nothing in the workspace changed outside the run since it last ran.".into());
    } else {
        let list: Vec<String> = s
            .changed_outside
            .iter()
            .take(10)
            .map(|c| {
                let kind = match c.kind {
                    ChangeKind::Added => "added",
                    ChangeKind::Modified => "modified",
                    ChangeKind::Removed => "removed",
                };
                format!("{} ({kind})", c.path)
            })
            .collect();
        let more = s.changed_outside.len().saturating_sub(list.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        out.push(format!(
            "Changed outside the run since it last ran: {}{more}. Read them again before relying on them.",
            list.join(", ")
        ));
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paragraph_names_what_a_resumed_agent_must_know() {
        let s = RecoverySummary {
            attempt: 2,
            resumed_from: Some(7),
            steps_done: 3,
            next_step: 4,
            last_error: Some("lost: lease expired".into()),
            settled: vec![SettledEffect {
                step: 3,
                tool: "fs.write".into(),
                status: "confirmed".into(),
                how: "the files already held the post-image".into(),
            }],
            changed_outside: vec![Change {
                path: "config/app.toml".into(),
                kind: ChangeKind::Modified,
                sha256: None,
            }],
            ..RecoverySummary::default()
        }
        .with_text();
        for needle in [
            "attempt 2",
            "checkpoint 7",
            "3 steps done",
            "step 4",
            "lease expired",
            "Step 3 (fs.write) was confirmed",
            "config/app.toml (modified)",
        ] {
            assert!(
                s.text.contains(needle),
                "{needle:?} missing from {:?}",
                s.text
            );
        }
    }
}
