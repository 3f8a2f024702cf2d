//! Reusing a step the journal already holds: after resuming from an earlier checkpoint the agent
//! proposes it again, and gets the recorded result instead of a second run. A different proposal
//! for a recorded step is not guessed at.

use crate::checkpoint::Level;
use crate::error::Result;
use crate::journal::{EffectClass, IntentStatus};
use crate::step::one_line;
use crate::store::{intents, steps};
use crate::action::{Action, ToolCall};
use crate::tools;

use super::commit::{Change, Report};
use super::decide::{self, Reuse};
use super::drive::Drive;
use super::DriveOutcome;

impl Drive<'_> {
    pub(super) async fn reuse(
        &mut self,
        prev: steps::StepRow,
        call: &ToolCall,
        action_hash: &str,
    ) -> Result<Option<DriveOutcome>> {
        let seq = prev.seq;
        let intent = intents::for_step(self.e.store.pool(), self.run, seq).await?;
        match decide::reuse(&prev, &call.tool, action_hash) {
            Reuse::Recorded => {}
            Reuse::Diverged(reason) => return self.suspend(&reason).await.map(Some),
            Reuse::Unsettled(reason) => {
                let hint = match &intent {
                    Some(i)
                        if matches!(i.status, IntentStatus::Unknown | IntentStatus::Pending) =>
                    {
                        format!(
                            "; decide with `reins resolve {} --done | --retry | --skip`",
                            i.id
                        )
                    }
                    _ => String::new(),
                };
                return self.suspend(&format!("{reason}{hint}")).await.map(Some);
            }
        }
        let result = self
            .e
            .opened_text(
                prev.result.as_deref().unwrap_or(""),
                &format!("step {seq}'s result"),
            )
            .await?;
        if let Some(intent) = intent.filter(|i| i.status == IntentStatus::Confirmed) {
            for img in intent.post_images {
                self.cp.files.insert(img.path, img.sha256);
            }
        }
        let ok = decide::reused_ok(prev.status);
        self.observe(seq, &prev.tool, ok, &result, Some(&call.args))
            .await?;
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
        let checkpoint = self.checkpoint(
            Level::Step,
            format!("step {seq} {} reused from the journal", prev.tool),
        )?;
        let change = Change::default()
            .checkpoint(checkpoint)
            .report(Report::Step {
                seq,
                tool: prev.tool,
                status: prev.status,
                why: prev.why,
                summary,
                reused: true,
            });
        self.commit(change).await?;
        Ok(None)
    }
}
