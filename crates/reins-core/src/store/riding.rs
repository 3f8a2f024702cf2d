//! Commits that ride with the next durable one. A step's own write whose content the disk can
//! settle (a file effect's confirmation) commits on a connection of its own with
//! `synchronous = NORMAL`: in WAL mode its commit is not synced, and the next `FULL` commit's sync
//! of the log carries it. Its audit head reaches the anchor only with that commit (`Anchor::hold`).

use sqlx::any::AnyPoolOptions;

use super::{Pool, Result, Store, Tx, SQLITE_SETTINGS};

/// The one connection whose commits ride: the same settings, its commits not synced on their own.
const SQLITE_RIDING: &str = "PRAGMA synchronous = NORMAL;";

/// The riding connection's pool, opened when first used.
pub(super) fn pool(url: &str) -> Result<Pool, sqlx::Error> {
    AnyPoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .after_connect(|conn, _| {
            Box::pin(async move {
                sqlx::Executor::execute(&mut *conn, SQLITE_SETTINGS).await?;
                sqlx::Executor::execute(&mut *conn, SQLITE_RIDING).await?;
                Ok(())
            })
        })
        .connect_lazy(url)
}

impl Store {
    /// A step's own write whose commit need not be durable on its own: the disk can settle what
    /// it records (a file effect's confirmation, whose post-images recovery reads back), so it
    /// rides with the next durable commit instead of syncing the log itself. If the machine
    /// loses power first, the intent is found pending and settled from the disk, as after a
    /// crash between the effect and its confirmation. Its audit head reaches the anchor only with
    /// that durable commit. A shared database commits it durably, as any other.
    pub async fn begin_riding(&self) -> Result<Tx> {
        let Some(riding) = &self.riding else {
            return self.begin_quiet().await;
        };
        Ok(self
            .begin_on(riding, self.dialect.begin_quiet_write())
            .await?
            .riding())
    }

    /// Whether a commit that would ride may instead wait, whole, for the writer's next change
    /// and commit inside it (`Store::apply_together`): a local database only. A shared one
    /// commits every change durably as it comes, in as few statements as it can.
    pub fn holds_riding(&self) -> bool {
        self.riding.is_some()
    }

    /// Closes the riding connection. Commits that rode with no durable one after them are synced
    /// by folding the log in; then their heads go to the anchor.
    pub(super) async fn close_riding(&self) {
        let Some(riding) = &self.riding else {
            return;
        };
        riding.close().await;
        let held = self.anchor.release();
        if held.is_empty() {
            return;
        }
        match sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&self.pool)
            .await
        {
            Ok(_) => self.anchor.submit(held),
            Err(e) => tracing::warn!(error = %e, "the log was not folded in at close; the audit anchor stays behind its last commits"),
        }
    }
}
