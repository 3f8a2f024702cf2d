//! A write transaction that also knows the audit chain head it produced, so committing it can move
//! the head anchor outside the database (see `anchor`). Dereferences to the connection, so queries
//! take `&mut **tx` as with a plain sqlx transaction.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::Transaction;

use super::{Conn, Db};

use super::anchor::{Anchor, Mark};

pub struct Tx {
    inner: Transaction<'static, Db>,
    dialect: super::Dialect,
    anchor: Arc<Anchor>,
    wake: Arc<super::wake::Wake>,
    /// The chain head and the marks this transaction appended, written out once it commits.
    marks: Vec<Mark>,
}

impl Tx {
    pub(super) fn new(
        inner: Transaction<'static, Db>,
        dialect: super::Dialect,
        anchor: Arc<Anchor>,
        wake: Arc<super::wake::Wake>,
    ) -> Self {
        Self {
            inner,
            dialect,
            anchor,
            wake,
            marks: Vec::new(),
        }
    }

    pub fn dialect(&self) -> super::Dialect {
        self.dialect
    }

    /// Records events this transaction appended: the last becomes the head once committed.
    pub(super) fn appended(&mut self, marks: impl IntoIterator<Item = Mark>) {
        self.marks.extend(marks);
    }

    /// Commits, then hands the new head to the anchor's writer and wakes whoever waits for a
    /// change (on a shared database, every machine: the notification is delivered with the
    /// commit, and only if it happens). A commit never waits for the anchor and never fails
    /// because of it: an anchor behind the database is tolerated by verification (one ahead of
    /// it, or disagreeing with it, is what it reports).
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        let Self {
            inner,
            anchor,
            wake,
            marks,
            ..
        } = self;
        inner.commit().await?;
        if !marks.is_empty() {
            anchor.submit(marks);
        }
        wake.bump();
        Ok(())
    }
}

impl Tx {
    /// Commits without telling the anchor: what a hand-edit of the database amounts to.
    #[cfg(test)]
    pub(crate) async fn commit_without_anchor(self) -> Result<(), sqlx::Error> {
        self.inner.commit().await
    }
}

impl Deref for Tx {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        &self.inner
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.inner
    }
}
