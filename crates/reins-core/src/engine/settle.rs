//! Settling the effect journal after a restart: every intent left pending by a crash is resolved
//! before the agent proposes anything. File effects settle deterministically from the disk; anything
//! that cannot be known suspends the run for a human. Nothing is re-run on a guess.

use crate::event as ev;
use crate::error::Result;
use crate::ids::IntentId;
use crate::journal::{settle_files, EffectClass, IntentStatus, Settlement};
use crate::step::StepStatus;
use crate::store::write::Write;
use crate::store::{audit, audit::Actor, intents, StoreError};
use crate::action::Action;
use crate::tools;

use super::commit::Change;
use super::drive::Drive;
use super::{DriveOutcome, Progress};

impl Drive<'_> {
    /// `Some(outcome)` when an intent could not be settled and the run now waits for a human.
    pub(super) async fn settle_journal(&mut self) -> Result<Option<DriveOutcome>> {
        for intent in intents::pending(self.e.store.pool(), self.run).await? {
            let id: IntentId = intent
                .id
                .parse()
                .map_err(|_| StoreError::Invalid(format!("intent id {:?}", intent.id)))?;
            let (status, how) = self.settle_one(&intent).await?;
            self.resumed.settled.push(crate::resume::SettledEffect {
                step: intent.step_seq,
                tool: intent.tool.clone(),
                status: status.as_str().into(),
                how: how.clone(),
            });
            self.obs.on(&Progress::Settled {
                step: intent.step_seq,
                tool: intent.tool.clone(),
                how: how.clone(),
            });
            if status != IntentStatus::Confirmed {
                let why = format!("after a restart: {how}");
                return self
                    .outcome_unknown(id, intent.step_seq, &intent.tool, &why)
                    .await
                    .map(Some);
            }
        }
        Ok(None)
    }

    /// Settles one pending intent. Returns Confirmed when it was settled (and recorded), or Unknown
    /// with the reason a human must decide.
    async fn settle_one(&mut self, intent: &intents::IntentRow) -> Result<(IntentStatus, String)> {
        let unknown = |why: String| Ok((IntentStatus::Unknown, why));
        let opened = self
            .e
            .opened(&intent.action, &format!("step {}'s action", intent.step_seq))
            .await?;
        let action = match Action::parse(opened.call(), &self.ws) {
            Ok(a) => a,
            Err(e) => return unknown(format!("the recorded action no longer validates: {e}")),
        };
        if let Action::Remember(r) = &action {
            // Remembering is idempotent: doing it again after a restart is safe.
            let how = match self.remember(intent.step_seq, r, None).await {
                Ok(text) => {
                    format!("recovered: remembering is idempotent, so it was done again: {text}")
                }
                Err(e) => {
                    return unknown(format!("remembering again after the restart failed: {e}"))
                }
            };
            let id: IntentId = intent
                .id
                .parse()
                .map_err(|_| StoreError::Invalid(format!("intent id {:?}", intent.id)))?;
            self.confirm_recovered(id, intent, &how).await?;
            return Ok((IntentStatus::Confirmed, how));
        }
        if matches!(action, Action::Shell(_)) && !intent.pre_images.is_empty() {
            return self.settle_staged(intent).await;
        }
        if action.effect_class() == EffectClass::Pure || action.touched().is_empty() {
            return unknown("not a file effect; its outcome cannot be read from the disk".into());
        }
        let pre = &intent.pre_images;
        let post = &intent.post_images;
        // A write killed half-way leaves its temp file beside the target; it was never visible.
        for path in action.touched() {
            self.ws.remove_leftover_temps(path);
        }
        let current = match self.ws.hashes(action.touched()) {
            Ok(c) => c,
            Err(e) => return unknown(format!("the files cannot be read: {e}")),
        };
        let id: IntentId = intent
            .id
            .parse()
            .map_err(|_| StoreError::Invalid(format!("intent id {:?}", intent.id)))?;
        match settle_files(pre, post, &current) {
            Settlement::Done => {
                let how = "recovered: the files already held the post-image, so the effect had run; confirmed without running it again";
                self.confirm_recovered(id, intent, how).await?;
                Ok((IntentStatus::Confirmed, how.into()))
            }
            Settlement::NotDone => {
                let plan = match tools::plan(&action, &self.ws) {
                    Ok(p) => p,
                    Err(e) => return unknown(format!("the effect cannot be planned again: {e}")),
                };
                if !crate::journal::FileImage::all_same(&plan.pre, pre)
                    || !crate::journal::FileImage::all_same(&plan.post, post) {
                    return unknown("re-planning the effect gives different images than the journal recorded".into());
                }
                // The pre-images committed with the intent; nothing to store again.
                if let Err(e) = tools::apply(&plan, &self.ws) {
                    return unknown(format!("running the effect after the restart failed: {e}"));
                }
                let how = "recovered: the files still held the pre-image, so the effect had not run; ran it once";
                self.confirm_recovered(id, intent, how).await?;
                Ok((IntentStatus::Confirmed, how.into()))
            }
            Settlement::Diverged => unknown(
                "the files match neither the state before the effect nor the state after it; something else changed them".into(),
            ),
        }
    }

    /// A staged command's result, applied file by file when the process died: each file either
    /// still holds what the journal recorded before or already holds its new bytes (every write is
    /// atomic). The ones still before are applied, once; anything else is a person's to decide.
    async fn settle_staged(&mut self, intent: &intents::IntentRow) -> Result<(IntentStatus, String)> {
        let unknown = |why: String| Ok((IntentStatus::Unknown, why));
        let id: IntentId = intent
            .id
            .parse()
            .map_err(|_| StoreError::Invalid(format!("intent id {:?}", intent.id)))?;
        let pool = self.e.store.pool();
        let card = crate::store::approvals::latest_for_step(pool, self.run, intent.step_seq).await?;
        let Some(effect) = card.and_then(|c| c.staged) else {
            return unknown("a staged result whose card is gone; its files cannot be settled".into());
        };
        for img in &intent.pre_images {
            if let Ok(rel) = crate::workspace::RelPath::parse(&img.path) {
                self.ws.remove_leftover_temps(&rel);
            }
        }
        let plan = match self.staged_plan(&effect, true).await {
            Ok(p) => p,
            Err(e) => return unknown(format!("the staged result cannot be planned again: {e}")),
        };
        let before: std::collections::BTreeMap<&str, &Option<crate::digest::Digest>> = intent
            .pre_images
            .iter()
            .map(|i| (i.path.as_str(), &i.sha256))
            .collect();
        if let Some(moved) = plan
            .pre
            .iter()
            .find(|img| before.get(img.path.as_str()) != Some(&&img.sha256))
        {
            return unknown(format!(
                "{} holds neither what it held before the staged result nor its new bytes; something else changed it",
                moved.path
            ));
        }
        let how = if plan.ops.is_empty() {
            "recovered: every file already held the staged result; confirmed without applying it again".to_owned()
        } else {
            if let Err(e) = tools::apply(&plan, &self.ws) {
                return unknown(format!("applying the rest of the staged result failed: {e}"));
            }
            format!(
                "recovered: {} of {} files still held what they held before; applied those once",
                plan.ops.len(),
                intent.pre_images.len()
            )
        };
        self.confirm_recovered(id, intent, &how).await?;
        Ok((IntentStatus::Confirmed, how))
    }

    /// Records a settled effect: intent and step. The agent hears of it when it proposes the step
    /// again and the journal's result is reused.
    async fn confirm_recovered(
        &mut self,
        id: IntentId,
        intent: &intents::IntentRow,
        how: &str,
    ) -> Result<()> {
        let summary = intent
            .result
            .clone()
            .unwrap_or_else(|| format!("{} confirmed", intent.tool));
        let change = Change::rows(vec![Write::Settle {
            seq: intent.step_seq,
            status: IntentStatus::Confirmed,
            step_status: StepStatus::Done,
            result: summary,
            settled_by: Some(how.into()),
            ends_processes: false,
        }])
        .event(audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::IntentRecovered {
                intent: id.to_string(),
                step: intent.step_seq,
                settled_by: how.into(),
            },
        ));
        self.commit(change).await?;
        Ok(())
    }
}
