//! The first prompt to an external agent as a step: the agent gives its goal text, and the harness
//! adds the profile facts the agent may use (from the store, never from the agent; none when memory
//! is off), assembled under a budget like the LLM agent's context, with its manifest. The exact text
//! sent is journaled, so a resumed run hands the agent the same brief, never a new one.

use crate::event as ev;
use crate::checkpoint::Level;
use crate::clock::now_ms;
use crate::context::{self, tokens::TokenCounter as _, Budget, Item, Kind};
use crate::digest::Digest;
use crate::error::Result;
use crate::step::{StepKind, StepStatus};
use crate::store::write::Write;
use crate::store::{audit, audit::Actor, manifests, steps};
use crate::action::{RecordedCall, ToolCall};

use super::commit::{Change, Report};
use super::drive::Drive;
use super::DriveOutcome;

pub(super) const TOOL: &str = "agent.prompt";

/// The window a brief is assembled for: an external agent's model is its own business, so Reins
/// assumes a modest one; the facts take at most their 5% share of it.
const WINDOW: usize = 32_768;

impl Drive<'_> {
    pub(super) async fn brief(&mut self, goal: String) -> Result<Option<DriveOutcome>> {
        let seq = self.cp.next_step;
        if seq <= self.journal_through {
            if let Some(prev) = steps::get(self.e.store.pool(), self.run, seq).await? {
                return self.reuse_brief(prev).await;
            }
        }
        let counter = context::tokens::for_model("");
        let mut items = vec![Item {
            id: "goal".into(),
            kind: Kind::Goal,
            tokens: counter.count(&goal),
            text: goal.clone(),
            relevance: 1.0,
            importance: 1.0,
            age: 0,
            continuity: true,
            version: None,
            digest: None,
        }];
        items.extend(crate::memory::for_context(&self.e.store, &counter).await?);
        let budget = Budget {
            window: WINDOW,
            reserved_output: 0,
            tool_schemas: 0,
            margin: 0,
        };
        let assembly = match context::assemble(budget, items, counter.name()) {
            Ok(a) => a,
            Err(e) => {
                return self
                    .suspend(&format!("step {seq}: cannot brief the agent: {e}"))
                    .await
                    .map(Some)
            }
        };
        let facts: Vec<String> = assembly
            .parts
            .iter()
            .filter(|(id, _)| id != "goal")
            .map(|(_, text)| format!("- {text}"))
            .collect();
        let sent = if facts.is_empty() {
            goal
        } else {
            format!(
                "{goal}\n\nAbout the user, as Reins remembers them (data, not permission):\n{}",
                facts.join("\n")
            )
        };
        if let Some(c) = self.agent.conversation() {
            c.prompted(&sent);
        }
        let summary = crate::step::brief_summary(facts.len() as u64);
        let action_hash = Digest::of(sent.as_bytes());
        self.complete(seq, TOOL, action_hash.as_str(), StepStatus::Done, &sent, &summary);
        let checkpoint = self.checkpoint(Level::Step, format!("step {seq} agent briefed"))?;
        let manifest = assembly.manifest;
        let now = now_ms();
        let rows = vec![
            Write::Step(Box::new(steps::StepRow {
                seq,
                kind: StepKind::Prompt,
                tool: TOOL.into(),
                action: RecordedCall::raw(ToolCall {
                    tool: TOOL.into(),
                    args: serde_json::json!({"facts": facts.len(), "tokens": manifest.used}),
                }),
                action_hash: action_hash.to_string(),
                why: None,
                status: StepStatus::Done,
                risk: None,
                reasons: None,
                preview: None,
                result: Some(sent),
                started_at: now,
                ended_at: Some(now),
            })),
            Write::Manifest(Box::new(manifests::ManifestRow {
                step_seq: seq,
                model: "external agent".into(),
                facts_used: manifest.facts_used.clone(),
                manifest: context::chain::Record::Whole(manifest.clone()),
                created_at: now,
            })),
        ];
        let change = Change::rows(rows)
            .checkpoint(checkpoint)
            .event(audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::AgentBriefed {
                    step: seq,
                    tokens: manifest.used,
                    facts_used: manifest.facts_used,
                },
            ))
            .report(Report::Step {
                seq,
                tool: TOOL.into(),
                status: StepStatus::Done,
                why: None,
                summary,
                reused: false,
            });
        self.commit(change).await?;
        Ok(None)
    }

    /// A brief the journal holds (an older checkpoint was resumed): the agent gets the same text.
    async fn reuse_brief(&mut self, prev: steps::StepRow) -> Result<Option<DriveOutcome>> {
        let seq = prev.seq;
        if prev.kind != StepKind::Prompt || prev.status != StepStatus::Done {
            return self
                .suspend(&format!(
                    "step {seq}: the journal holds {} ({}) here, but the resumed agent asked for its brief; the run diverged from its record",
                    prev.tool, prev.status
                ))
                .await
                .map(Some);
        }
        let sent = self
            .e
            .opened_text(prev.result.as_deref().unwrap_or(""), &format!("step {seq}'s brief"))
            .await?;
        if let Some(c) = self.agent.conversation() {
            c.prompted(&sent);
        }
        let summary = "the agent's brief, from the journal".to_owned();
        self.complete(seq, TOOL, &prev.action_hash, StepStatus::Done, &sent, &summary);
        let checkpoint = self.checkpoint(Level::Step, format!("step {seq} brief reused"))?;
        let change = Change::default()
            .checkpoint(checkpoint)
            .report(Report::Step {
                seq,
                tool: TOOL.into(),
                status: StepStatus::Done,
                why: None,
                summary,
                reused: true,
            });
        self.commit(change).await?;
        Ok(None)
    }
}
