//! Reusing a step the journal already holds: after resuming from an earlier checkpoint the agent
//! proposes it again, and gets the recorded result instead of a second run.

use crate::checkpoint::Level;
use crate::error::Result;
use crate::journal::{EffectClass, IntentStatus};
use crate::store::{intents, steps};
use crate::tools::{self, Action, ToolCall};

use super::drive::Drive;
use super::step::one_line;
use super::{DriveOutcome, Progress};
use crate::step::StepStatus;

impl Drive<'_> {
    /// A step already in the journal (we resumed from an earlier checkpoint): reuse its result, never
    /// re-run it. A different proposal for a recorded step is not guessed at.
    pub(super) async fn reuse(
        &mut self,
        prev: steps::StepRow,
        call: &ToolCall,
        action_hash: &str,
    ) -> Result<Option<DriveOutcome>> {
        let seq = prev.seq;
        if prev.action_hash != action_hash {
            let reason = format!(
                "step {seq}: the agent now proposes {} (action {}) but the journal recorded {} (action {}); not guessing which is right",
                call.tool,
                &action_hash[..12.min(action_hash.len())],
                prev.tool,
                &prev.action_hash[..12.min(prev.action_hash.len())]
            );
            return self.suspend(&reason).await.map(Some);
        }
        if !prev.status.is_reusable() {
            let hint = match intents::for_step(self.e.store.pool(), self.run, seq).await? {
                Some(i) if matches!(i.status, IntentStatus::Unknown | IntentStatus::Pending) => {
                    format!(
                        "; decide with `reins resolve {} --done | --retry | --skip`",
                        i.id
                    )
                }
                _ => String::new(),
            };
            let reason = format!(
                "step {seq} ({}) is recorded as {:?} and cannot be reused{hint}",
                prev.tool, prev.status
            );
            return self.suspend(&reason).await.map(Some);
        }
        let result = prev.result.clone().unwrap_or_default();
        if let Some(intent) = intents::for_step(self.e.store.pool(), self.run, seq).await? {
            if intent.status == IntentStatus::Confirmed {
                for img in intent.post_images {
                    self.cp.files.insert(img.path, img.sha256);
                }
            }
        }
        let ok = prev.status == StepStatus::Done;
        self.observe(seq, &prev.tool, ok, &result)?;
        let summary = match Action::parse(call, &self.ws) {
            Ok(a) if ok && a.effect_class() == EffectClass::Pure => tools::describe(&a, &result),
            _ => one_line(&result),
        };
        self.complete(
            seq,
            &prev.tool,
            &prev.action_hash,
            prev.status,
            &result,
            &summary,
        );
        let cp_seq = self
            .write_checkpoint(
                Level::Step,
                format!("step {seq} {} reused from the journal", prev.tool),
            )
            .await?;
        self.obs.on(&Progress::Step {
            seq,
            tool: prev.tool,
            status: prev.status,
            why: prev.why,
            summary,
            checkpoint: cp_seq,
            reused: true,
        });
        Ok(None)
    }
}
