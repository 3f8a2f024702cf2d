//! Pairing attempts are rate-limited for the whole server, not per address: an attacker can change
//! addresses, a person pairs a phone once. A bucket of five attempts refills one every 12 s, so a
//! guesser gets about 25 tries in a code's five minutes against 2^50 codes.

use std::time::{Duration, Instant};

pub const BURST: u32 = 5;
pub const REFILL: Duration = Duration::from_secs(12);

#[derive(Debug)]
pub struct Throttle {
    tokens: u32,
    last: Instant,
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new(Instant::now())
    }
}

impl Throttle {
    /// A full bucket at `now`.
    pub fn new(now: Instant) -> Self {
        Self {
            tokens: BURST,
            last: now,
        }
    }

    /// Takes one attempt, or says how many seconds to wait for the next.
    pub fn take(&mut self, now: Instant) -> Result<(), u64> {
        let refilled = now.duration_since(self.last).as_millis() / REFILL.as_millis();
        if refilled > 0 {
            let refilled = u32::try_from(refilled).unwrap_or(u32::MAX);
            self.tokens = self.tokens.saturating_add(refilled).min(BURST);
            self.last += REFILL * refilled.min(BURST);
            if self.tokens == BURST {
                self.last = now;
            }
        }
        if self.tokens == 0 {
            let wait = REFILL.saturating_sub(now.duration_since(self.last));
            return Err(wait.as_secs().max(1));
        }
        self.tokens -= 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_at_once_then_one_every_refill() {
        let start = Instant::now();
        let mut t = Throttle::new(start);
        for _ in 0..BURST {
            assert!(t.take(start).is_ok());
        }
        let wait = t.take(start);
        assert!(matches!(wait, Err(1..=12)), "{wait:?}");
        assert!(t.take(start + REFILL).is_ok(), "one back after a refill");
        assert!(t.take(start + REFILL).is_err());
        assert!(
            t.take(start + REFILL * 100).is_ok(),
            "full again after long"
        );
    }
}
