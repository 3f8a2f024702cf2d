//! What kind of failure stopped a drive, and what the harness does about it (seed `004` §9):
//! transient failures are retried with backoff under the run's budget; a lost worker is adopted
//! (and counted against the same budget, so a run that keeps killing its worker stops); a full or
//! failing disk and everything not understood wait for a person. Nothing is retried blindly.

use serde::{Deserialize, Serialize};

use crate::blob::BlobError;
use crate::error::Error;
use crate::store::StoreError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum FailureClass {
    /// Busy database, a timeout: likely to pass. Retried with backoff.
    Transient,
    /// The worker driving the run died, froze past its lease, or another took it over.
    WorkerLost,
    /// No space, a failing or read-only disk: a person must act before anything else runs.
    Resource,
    /// A bug or invalid data: retrying would do the same again.
    Permanent,
    /// A person paused the run (not a failure; listed for completeness of the taxonomy).
    UserPause,
    /// A checkpoint failed verification.
    CheckpointInvalid,
}

impl FailureClass {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Transient => "transient",
            FailureClass::WorkerLost => "worker_lost",
            FailureClass::Resource => "resource",
            FailureClass::Permanent => "permanent",
            FailureClass::UserPause => "user_pause",
            FailureClass::CheckpointInvalid => "checkpoint_invalid",
        }
    }
}

/// Sorts an error into a class.
pub fn classify(e: &Error) -> FailureClass {
    match e {
        Error::Store(StoreError::LostLease { .. } | StoreError::StaleState { .. }) => {
            FailureClass::WorkerLost
        }
        Error::Store(StoreError::Sqlx(sq)) => classify_sqlx(sq),
        Error::Blob(BlobError::Io { source, .. }) | Error::Io { source, .. } => classify_io(source),
        Error::Blob(BlobError::Corrupt { .. } | BlobError::Missing { .. }) => {
            FailureClass::CheckpointInvalid
        }
        Error::Checkpoint(_) => FailureClass::CheckpointInvalid,
        Error::Provider(p) if p.is_transient() => FailureClass::Transient,
        _ => FailureClass::Permanent,
    }
}

fn classify_sqlx(e: &sqlx::Error) -> FailureClass {
    match e {
        sqlx::Error::PoolTimedOut => FailureClass::Transient,
        // A database server's connection going away (a restart, the network).
        sqlx::Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::NotConnected
            ) =>
        {
            FailureClass::Transient
        }
        sqlx::Error::Io(io) => classify_io(io),
        // The shared database restarted or the network between dropped: connect again later.
        sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => FailureClass::Transient,
        sqlx::Error::Database(db)
            if db
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .is_some() =>
        {
            postgres_class(db.code().as_deref().unwrap_or_default())
        }
        sqlx::Error::Database(db) => {
            let code = db.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
            match code & 0xff {
                // SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
                5 | 6 => FailureClass::Transient,
                // SQLITE_IOERR, SQLITE_FULL, SQLITE_READONLY, SQLITE_CANTOPEN
                10 | 13 | 8 | 14 => FailureClass::Resource,
                // SQLITE_CORRUPT, SQLITE_NOTADB
                11 | 26 => FailureClass::Resource,
                _ => FailureClass::Permanent,
            }
        }
        _ => FailureClass::Permanent,
    }
}

/// A PostgreSQL error by its SQLSTATE.
fn postgres_class(sqlstate: &str) -> FailureClass {
    match sqlstate {
        // connection exceptions; the server shutting down or starting; serialization, deadlock, a
        // lock wait given up, a session ended idle in its transaction (each rolled back whole)
        c if c.starts_with("08") => FailureClass::Transient,
        "57P01" | "57P02" | "57P03" | "40001" | "40P01" | "53300" | "55P03" | "25P03" => {
            FailureClass::Transient
        }
        // disk full, out of memory
        c if c.starts_with("53") => FailureClass::Resource,
        // data corrupted, index corrupted
        "XX001" | "XX002" => FailureClass::Resource,
        _ => FailureClass::Permanent,
    }
}

fn classify_io(e: &std::io::Error) -> FailureClass {
    use std::io::ErrorKind as K;
    match e.raw_os_error() {
        Some(
            libc::ENOSPC | libc::EDQUOT | libc::EIO | libc::EROFS | libc::EMFILE | libc::ENFILE,
        ) => return FailureClass::Resource,
        Some(libc::EAGAIN | libc::EINTR | libc::ETIMEDOUT | libc::EBUSY) => {
            return FailureClass::Transient
        }
        _ => {}
    }
    match e.kind() {
        K::TimedOut | K::Interrupted | K::WouldBlock | K::ResourceBusy => FailureClass::Transient,
        K::StorageFull | K::QuotaExceeded | K::ReadOnlyFilesystem => FailureClass::Resource,
        _ => FailureClass::Permanent,
    }
}

/// How many retries a run may use, over how long, and how long to wait between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryBudget {
    pub max_retries: u32,
    /// Retries stop once this long has passed since the first one.
    pub window_ms: i64,
    pub base_delay_ms: i64,
    pub max_delay_ms: i64,
}

impl Default for RetryBudget {
    fn default() -> Self {
        Self {
            max_retries: 10,
            window_ms: 60 * 60 * 1000,
            base_delay_ms: 500,
            max_delay_ms: 60_000,
        }
    }
}

impl RetryBudget {
    /// The wait before retry number `n` (1-based): exponential, capped, with up to 25% jitter from
    /// `salt` so workers retrying together spread out.
    pub fn delay_ms(&self, n: u32, salt: u64) -> i64 {
        let exp = self
            .base_delay_ms
            .saturating_mul(1_i64 << n.saturating_sub(1).min(20));
        let capped = exp.min(self.max_delay_ms);
        let jitter = i64::try_from(salt % 1000).unwrap_or(0) * capped / 4000;
        capped + jitter
    }

    /// Whether retry number `n`, `elapsed_ms` after the first, is still within the budget.
    pub fn allows(&self, n: u32, elapsed_ms: i64) -> bool {
        n <= self.max_retries && elapsed_ms <= self.window_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_connection_going_away_is_retried_but_a_file_error_keeps_its_class() {
        let sqlx_io = |kind| {
            Error::Store(StoreError::Sqlx(sqlx::Error::Io(std::io::Error::from(kind))))
        };
        assert_eq!(
            classify(&sqlx_io(std::io::ErrorKind::ConnectionReset)),
            FailureClass::Transient
        );
        assert_eq!(
            classify(&sqlx_io(std::io::ErrorKind::ConnectionRefused)),
            FailureClass::Transient
        );
        assert_eq!(
            classify(&Error::Store(StoreError::Sqlx(sqlx::Error::PoolClosed))),
            FailureClass::Transient
        );
        let file = Error::Io {
            context: "reading".into(),
            source: std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
        };
        assert_eq!(classify(&file), FailureClass::Permanent);
        assert_eq!(postgres_class("08006"), FailureClass::Transient);
        assert_eq!(postgres_class("57P01"), FailureClass::Transient);
        assert_eq!(postgres_class("53100"), FailureClass::Resource);
        assert_eq!(postgres_class("23505"), FailureClass::Permanent);
    }

    #[test]
    fn disk_full_waits_for_a_person_and_busy_is_retried() {
        let full = Error::Io {
            context: "writing".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        assert_eq!(classify(&full), FailureClass::Resource);
        let busy = Error::Io {
            context: "writing".into(),
            source: std::io::Error::from_raw_os_error(libc::EBUSY),
        };
        assert_eq!(classify(&busy), FailureClass::Transient);
        let lost = Error::Store(StoreError::LostLease {
            run: "r".into(),
            fence: 1,
        });
        assert_eq!(classify(&lost), FailureClass::WorkerLost);
        assert_eq!(
            classify(&Error::Invalid("x".into())),
            FailureClass::Permanent
        );
    }

    #[test]
    fn backoff_grows_is_capped_and_the_budget_ends() {
        let b = RetryBudget::default();
        assert_eq!(b.delay_ms(1, 0), 500);
        assert_eq!(b.delay_ms(2, 0), 1000);
        assert_eq!(b.delay_ms(30, 0), 60_000);
        assert!(b.delay_ms(1, 999) <= 500 + 125);
        assert!(b.allows(10, 0) && !b.allows(11, 0));
        assert!(!b.allows(1, b.window_ms + 1));
    }
}
