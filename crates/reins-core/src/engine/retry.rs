//! A transient failure (a model server busy, a connection dropped): the retry is recorded, the
//! run let go, and claimed again after a backoff — or, with the run's retry budget spent,
//! suspended for a person.

use crate::event::{self as ev, Actor};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::run::{RunEvent, RunState};
use crate::store::audit;
use crate::store::write::{Transition, Write};

use super::commit::Change;
use super::drive::Drive;
use super::{DriveOutcome, Progress};

impl Drive<'_> {
    /// A transient failure: record a retry, let the run go, and have it claimed again after a
    /// backoff — or, with the budget spent, suspend it for a person.
    pub(super) async fn retry_later(&mut self, error: &Error) -> Result<DriveOutcome> {
        let now = now_ms();
        let text = error.to_string();
        let salt = u64::try_from(now).unwrap_or(0) ^ u64::from(std::process::id());
        let prior = crate::store::retries::list(self.e.store.pool(), self.run).await?;
        let n = u32::try_from(prior.len() + 1).unwrap_or(u32::MAX);
        let first = prior.first().map_or(now, |r| r.at);
        if !self.e.budget.allows(n, now - first) {
            let reason = format!(
                "retry budget exhausted after {} retries over {} s; last error: {text}",
                n - 1,
                (now - first) / 1000
            );
            return self.suspend(&reason).await;
        }
        // A server that says when to come back (429 Retry-After) is not called before then.
        let asked = match error {
            Error::Provider(p) => p
                .retry_after_ms()
                .map_or(0, |ms| i64::try_from(ms).unwrap_or(i64::MAX)),
            _ => 0,
        };
        let delay = self.e.budget.delay_ms(n, salt).max(asked);
        let reason = format!(
            "retry {n} of {} in {:.1} s after a transient error: {text}",
            self.e.budget.max_retries,
            delay as f64 / 1000.0
        );
        let run = self.run;
        let error_text = text.clone();
        let change = Change::rows(vec![
            Write::Retry {
                class: crate::failure::FailureClass::Transient,
                error: text.clone(),
                delay_ms: delay,
            },
            // Not claimed again before the backoff ends.
            Write::RunNotBefore(now + delay),
        ])
        .moving(Transition::Moves(
            vec![RunEvent::Retry],
            Some(reason.clone()),
        ))
        .announcing(Box::new(move |applied| {
            let Some(moved) = applied.moved else {
                return Vec::new();
            };
            vec![audit::Event::new(
                Actor::Harness,
                Some(run),
                ev::RetryScheduled {
                    n,
                    class: "transient".into(),
                    error: error_text,
                    delay_ms: delay,
                    state: moved.to,
                },
            )]
        }))
        .ending_attempt(format!("retry: {text}"));
        let applied = self.commit(change).await?;
        let to = applied.moved.map_or(RunState::Queued, |m| m.to);
        self.obs.on(&Progress::Waiting {
            state: to,
            reason: reason.clone(),
        });
        Ok(if to == RunState::Paused {
            DriveOutcome::NeedsHuman { state: to, reason }
        } else {
            DriveOutcome::Retrying {
                at: now + delay,
                reason,
            }
        })
    }
}
