//! The kinds of failure that can stop a drive, and what the harness does about each (seed `004` §9):
//! transient failures are retried with backoff under the run's budget; a lost worker is adopted
//! (and counted against the same budget, so a run that keeps killing its worker stops); a full or
//! failing disk and everything not understood wait for a person. Nothing is retried blindly.

use serde::{Deserialize, Serialize};

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

/// An I/O error by what the system said: a full or failing disk waits for a person, a busy or
/// interrupted call is retried, anything else is permanent.
pub fn classify_io(e: &std::io::Error) -> FailureClass {
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
