//! A file effect's confirmation, held for the drive's next commit. Reins wrote the files itself,
//! so if the confirmation were lost, recovery would settle the intent from the disk (the
//! post-images it journaled): the confirmation need not be a commit of its own. On a local
//! database it waits, whole, and commits inside the drive's next change (`Store::apply_together`),
//! so a step costs one durable commit. It never waits on anything outside the harness: before a
//! model call, a command or a request, it commits on its own, riding with the next durable commit
//! as before (`Store::begin_riding`). An outside agent's confirmations are not held: it hears each
//! answer once its step commits.

use crate::error::{Error, Result};

use super::commit::{Applied, Change};
use super::drive::Drive;

impl Drive<'_> {
    /// Holds `change` (a file effect's riding confirmation) for the next commit where the store
    /// can; otherwise commits it now. An outside agent hears the answer right after the step
    /// commits, so its confirmation is never held: it would be released at once.
    pub(super) async fn commit_or_hold(&mut self, change: Change) -> Result<()> {
        if !change.rides || !self.e.store.holds_riding() || self.agent.external().is_some() {
            self.commit(change).await?;
            return Ok(());
        }
        // One at most: a step's intent commits between two confirmations.
        self.release_held().await?;
        *self.held_slot() = Some(change);
        Ok(())
    }

    /// Commits the held confirmation on its own, if there is one: before the drive waits on
    /// anything outside the harness, or stops.
    pub(super) async fn release_held(&self) -> Result<()> {
        let held = self.held_slot().take();
        if let Some(change) = held {
            self.commit(change).await?;
        }
        Ok(())
    }

    /// Applies `change`, and before it in the same transaction the held confirmation, if any.
    pub(super) async fn apply_with_held(&self, change: Change) -> Result<Applied> {
        let held = self.held_slot().take();
        let Some(held) = held else {
            return self
                .e
                .commit(Some(self.run), change, Some(self.owner()), self.obs)
                .await;
        };
        let mut applied = self
            .e
            .commit_together(
                Some(self.run),
                vec![held, change],
                Some(self.owner()),
                self.obs,
            )
            .await?;
        applied
            .pop()
            .ok_or_else(|| Error::Invalid("a commit of two changes applied none".into()))
    }

    fn held_slot(&self) -> std::sync::MutexGuard<'_, Option<Change>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
