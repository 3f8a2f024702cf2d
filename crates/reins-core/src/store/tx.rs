//! A write transaction that also knows the audit chain head it produced, so committing it can move
//! the head anchor outside the database (see `anchor`). Dereferences to the connection, so queries
//! take `&mut **tx` as with a plain sqlx transaction.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::Transaction;

use super::{Conn, Db};

use super::anchor::{Anchor, Mark};
use super::vouch::{AuditKey, Vouch};

/// The store's audit key holder, and the key this transaction's events are vouched for with.
pub(super) type Keyed = (Arc<Vouch>, Option<Arc<AuditKey>>);

pub struct Tx {
    inner: Inner,
    dialect: super::Dialect,
    anchor: Arc<Anchor>,
    wake: Arc<super::wake::Wake>,
    /// The chain head and the marks this transaction appended, written out once it commits.
    marks: Vec<Mark>,
    vouch: Arc<Vouch>,
    key: Option<Arc<AuditKey>>,
    /// The first event this transaction appended with a MAC.
    first_keyed: Option<i64>,
    /// Its commit is not made durable on its own: the next durable commit carries it
    /// (`Store::begin_riding`).
    rides: bool,
}

/// What a `Tx` writes through.
enum Inner {
    Transaction(Transaction<'static, Db>),
    /// No transaction around it: the one statement it runs commits on its own, whole or not at
    /// all (`fused::Whole`). Nothing else may be written through it.
    Single(sqlx::pool::PoolConnection<Db>),
}

impl Tx {
    pub(super) fn new(
        inner: Transaction<'static, Db>,
        dialect: super::Dialect,
        anchor: Arc<Anchor>,
        wake: Arc<super::wake::Wake>,
        keyed: Keyed,
    ) -> Self {
        Self {
            inner: Inner::Transaction(inner),
            dialect,
            anchor,
            wake,
            marks: Vec::new(),
            vouch: keyed.0,
            key: keyed.1,
            first_keyed: None,
            rides: false,
        }
    }

    /// A "transaction" of one statement that commits on its own (`Store::begin_single`).
    pub(super) fn single(
        conn: sqlx::pool::PoolConnection<Db>,
        dialect: super::Dialect,
        anchor: Arc<Anchor>,
        wake: Arc<super::wake::Wake>,
        keyed: Keyed,
    ) -> Self {
        Self {
            inner: Inner::Single(conn),
            dialect,
            anchor,
            wake,
            marks: Vec::new(),
            vouch: keyed.0,
            key: keyed.1,
            first_keyed: None,
            rides: false,
        }
    }

    /// Whether this is one statement committing on its own: the statement must then land whole
    /// (`fused::Whole`) and be read to its end, for its end is its commit.
    pub fn is_single(&self) -> bool {
        matches!(self.inner, Inner::Single(_))
    }

    pub fn dialect(&self) -> super::Dialect {
        self.dialect
    }

    /// Marks this transaction as one whose commit rides with the next durable one.
    pub(super) fn riding(mut self) -> Self {
        self.rides = true;
        self
    }

    /// Records events this transaction appended: the last becomes the head once committed.
    pub(super) fn appended(&mut self, marks: impl IntoIterator<Item = Mark>) {
        self.marks.extend(marks);
    }

    /// The key this transaction's events carry a MAC under (None: no keyring here).
    pub(super) fn key(&self) -> Option<&Arc<AuditKey>> {
        self.key.as_ref()
    }

    /// Records that events from `seq` on were appended with a MAC.
    pub(super) fn keyed_from(&mut self, seq: i64) {
        self.first_keyed = Some(self.first_keyed.map_or(seq, |f| f.min(seq)));
    }

    /// Commits, then hands the new head to the anchor's writer and wakes whoever waits for a
    /// change (on a shared database, every machine: the notification is delivered with the
    /// commit, and only if it happens). A commit never waits for the anchor and never fails
    /// because of it: an anchor behind the database is tolerated by verification (one ahead of
    /// it, or disagreeing with it, is what it reports).
    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        // The first keyed events this process writes to a log the keyring does not yet know as
        // keyed: read the log's first hash now, to remember it with them once committed.
        let to_mark = match self.first_keyed {
            Some(seq) if !self.vouch.marked() => {
                sqlx::query_scalar::<_, String>("SELECT hash FROM audit_events WHERE seq = 1")
                    .fetch_optional(&mut *self)
                    .await?
                    .map(|first| (seq, first))
            }
            _ => None,
        };
        let Self {
            inner,
            anchor,
            wake,
            mut marks,
            vouch,
            rides,
            ..
        } = self;
        // A durable commit carries the commits that rode before it: their heads go with its own.
        let carried = if rides { Vec::new() } else { anchor.release() };
        let committed = match inner {
            Inner::Transaction(tx) => tx.commit().await,
            Inner::Single(_) => Ok(()),
        };
        if let Err(e) = committed {
            // Whether it landed is not known: the heads it carried wait for the next one.
            anchor.hold(carried);
            return Err(e);
        }
        if let Some((seq, first)) = to_mark {
            vouch.mark(seq, first).await;
        }
        if rides {
            anchor.hold(marks);
        } else {
            let mut all = carried;
            all.append(&mut marks);
            if !all.is_empty() {
                anchor.submit(all);
            }
        }
        wake.bump();
        Ok(())
    }
}

impl Tx {
    /// Commits without telling the anchor: what a hand-edit of the database amounts to.
    #[cfg(test)]
    pub(crate) async fn commit_without_anchor(self) -> Result<(), sqlx::Error> {
        match self.inner {
            Inner::Transaction(tx) => tx.commit().await,
            Inner::Single(_) => Ok(()),
        }
    }
}

impl Deref for Tx {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        match &self.inner {
            Inner::Transaction(tx) => tx,
            Inner::Single(conn) => conn,
        }
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut Conn {
        match &mut self.inner {
            Inner::Transaction(tx) => tx,
            Inner::Single(conn) => conn,
        }
    }
}
