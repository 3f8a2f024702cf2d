//! Step 7: the durable intent. Before an effect runs, the step, its intent (pending, with the pre-
//! and post-image hashes) and the pre-image bytes commit together, as this worker (fence checked),
//! with a FULL sync. A crash after this point is settled from the journal and the disk; it is never
//! guessed at.

use crate::event::{self as ev, Actor};
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::Result;
use crate::fault_point;
use crate::ids::IntentId;
use crate::journal::IntentStatus;
use crate::step::StepStatus;
use crate::store::audit;
use crate::store::intents::IntentRow;
use crate::store::write::Write;
use crate::action::Action;
use crate::tools::EffectPlan;

use super::commit::Change;
use super::drive::Drive;
use super::record::StepRecord;

impl Drive<'_> {
    /// Writes the intent of an effect about to run; returns its id.
    pub(super) async fn intend(
        &mut self,
        rec: &StepRecord<'_>,
        action: &Action,
        plan: Option<&EffectPlan>,
        profile: Option<Digest>,
    ) -> Result<IntentId> {
        let seq = rec.seq;
        let (pre, post, pre_bytes, summary) = match plan {
            Some(p) => (
                p.pre.clone(),
                p.post.clone(),
                p.pre_bytes.as_slice(),
                Some(p.summary.clone()),
            ),
            None => (Vec::new(), Vec::new(), &[][..], None),
        };
        fault_point!("before_intent");
        if let Some(source) = crate::fault::error_at("intent_write") {
            return Err(crate::error::Error::Io {
                context: format!("writing the intent of step {seq}"),
                source,
            });
        }
        // Large pre-images go to the blob store now (fsynced); small ones commit with the intent.
        let small_blobs = self.e.stage_blobs(pre_bytes).await?;
        let intent = IntentId::new();
        let now = now_ms();
        let mut rows = Vec::with_capacity(2);
        if rec.reopen {
            rows.push(Write::StepReopened(seq));
        }
        rows.push(Write::Intent {
            step: Box::new(rec.row(StepStatus::Running, None, now)),
            intent: Box::new(IntentRow {
                id: intent.to_string(),
                step_seq: seq,
                tool: action.tool().into(),
                action: rec.action.clone(),
                action_hash: rec.action_hash.to_owned(),
                effect_class: action.effect_class(),
                status: IntentStatus::Pending,
                pre_images: pre.clone(),
                post_images: post.clone(),
                // What the agent will be told once confirmed; a restart that settles it tells the same.
                result: summary,
                settled_by: None,
                fence: self.fence(),
                created_at: now,
                settled_at: None,
            }),
            small_blobs,
        });
        let change = Change::rows(rows)
            .events(self.decided(rec))
            .event(audit::Event::new(
                Actor::Agent,
                Some(self.run),
                ev::IntentPending {
                    intent: intent.to_string(),
                    step: seq,
                    tool: action.tool().into(),
                    action_hash: rec.action_hash.into(),
                    effect_class: action.effect_class(),
                    pre,
                    post,
                    preview_sha256: rec.preview.map(|p| Digest::of(p.as_bytes())),
                    approval: rec.approval.map(str::to_owned),
                    verdict: rec.verdict.cloned(),
                    profile_sha256: profile,
                },
            ));
        self.commit(change).await?;
        // An ambiguous commit: it succeeded, but the caller is told it failed.
        if let Some(source) = crate::fault::error_at("intent_commit") {
            return Err(crate::error::Error::Io {
                context: format!("committing the intent of step {seq}"),
                source,
            });
        }
        fault_point!("after_intent");
        crate::fault::delay().await;
        Ok(intent)
    }
}
