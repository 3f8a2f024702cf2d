//! Trace and span ids derived from what they describe, so a span sent again (after a crash, by a
//! new holder of the export, or to a new collector) lands on the same span, and a recovered run's
//! later attempts join the trace its first one started.

use sha2::{Digest as _, Sha256};

use crate::ids::RunId;

/// A run's trace: its id's 16 bytes (a UUIDv7, so never all zero).
pub fn trace(run: RunId) -> [u8; 16] {
    *run.as_bytes()
}

/// What a span stands for within its run's trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part<'a> {
    Run,
    Attempt(i64),
    Step(i64),
    Review(&'a str),
}

/// The span id of `part` of `run`: the first 8 bytes of a SHA-256 over both, never all zero.
pub fn span(run: RunId, part: Part<'_>) -> [u8; 8] {
    let mut h = Sha256::new();
    h.update(b"reins.span\0");
    h.update(run.to_string().as_bytes());
    match part {
        Part::Run => h.update(b"\0run"),
        Part::Attempt(n) => h.update(format!("\0attempt\0{n}").as_bytes()),
        Part::Step(n) => h.update(format!("\0step\0{n}").as_bytes()),
        Part::Review(id) => h.update(format!("\0review\0{id}").as_bytes()),
    }
    let digest = h.finalize();
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct_per_part() {
        let run = RunId::new();
        let other = RunId::new();
        assert_eq!(span(run, Part::Step(3)), span(run, Part::Step(3)));
        let all = [
            span(run, Part::Run),
            span(run, Part::Attempt(1)),
            span(run, Part::Attempt(2)),
            span(run, Part::Step(1)),
            span(run, Part::Review("a")),
            span(other, Part::Run),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(trace(run), *run.as_bytes());
        assert_ne!(trace(run), trace(other));
    }
}
