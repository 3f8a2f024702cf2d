//! A write asked for again after it landed: an external agent restarted after a crash does not
//! know that its write was carried out, and asks for it once more (or for the permission to make
//! it). When the journal holds a step of exactly that action done by an earlier attempt of this
//! run, and the files already hold what it would write, the request is confirmed from the journal
//! and the disk: nothing is written, and nobody is asked to review it again. Within one attempt an
//! action asked for twice is judged twice, as the person's "once" means.

use crate::event::{self as ev, Actor};
use crate::error::Result;
use crate::step::StepStatus;
use crate::store::{audit, steps};
use crate::action::Action;
use crate::tools::EffectPlan;

use super::commit::Change;
use super::drive::Drive;
use super::record::StepRecord;

impl Drive<'_> {
    /// The step of an earlier attempt of this run that carried out exactly `action` (for a
    /// permission, the action it reports), when `plan` shows that doing it now would change
    /// nothing.
    pub(super) async fn already_applied(
        &self,
        action: &Action,
        plan: Option<&EffectPlan>,
    ) -> Result<Option<i64>> {
        let Some(plan) = plan else {
            return Ok(None);
        };
        let changes_nothing = !plan.post.is_empty()
            && plan.pre.len() == plan.post.len()
            && plan
                .pre
                .iter()
                .zip(&plan.post)
                .all(|(before, after)| before.path == after.path && before.sha256 == after.sha256);
        if !changes_nothing {
            return Ok(None);
        }
        let effect = match action {
            Action::Permission(p) => match p.implied.as_deref() {
                Some(implied) => implied,
                None => return Ok(None),
            },
            other => other,
        };
        Ok(steps::done_with(
            self.e.store.pool(),
            self.run,
            effect.tool(),
            effect.hash().as_str(),
            self.started_at,
        )
        .await?)
    }

    /// Records the step as done from the journal and the disk, audited, without running anything.
    pub(super) async fn confirm_applied(
        &mut self,
        rec: &StepRecord<'_>,
        earlier: i64,
    ) -> Result<()> {
        let change = Change::default().event(audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::AlreadyApplied {
                step: rec.seq,
                earlier,
                action_hash: rec.action_hash.into(),
            },
        ));
        self.commit(change).await?;
        let result = format!(
            "already done at step {earlier}: the files hold exactly this, so nothing was written again"
        );
        self.record(rec, StepStatus::Done, true, &result).await
    }
}
