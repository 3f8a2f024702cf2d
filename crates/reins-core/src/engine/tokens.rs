//! Token counts of the conversation's earlier turns, kept so that a long run is not counted again
//! for every call, nor again by a resumed run.

use std::collections::HashMap;
use std::sync::Arc;

use crate::context;
use crate::provider::Message;

/// Messages shared between the agent's cache and one call's prompt, never copied per call.
pub(super) type Shared = Arc<[Message]>;

/// Token counts of the conversation's earlier turns. A turn older than the latest never changes (the
/// agent only adds to the latest) and is handed over shared, the same allocation every call; so
/// within an attempt it is known by that allocation, which the cache holds on to (it cannot be
/// freed and reused for other messages meanwhile), and costs one lookup per call. Across processes
/// it is known by the digest of what was counted: the counts a run's calls made are kept in the
/// journal (`token_counts`), so a resumed run does not count its whole conversation again.
/// Everything else is counted every time.
#[derive(Default)]
pub(super) struct TokenCounts {
    counter: String,
    known: HashMap<usize, (Shared, usize)>,
    /// Read from the journal for `counter` (None: not read yet).
    journal: Option<HashMap<String, usize>>,
    /// Made by this attempt and not yet written: (digest, tokens).
    fresh: Vec<(String, i64)>,
}

impl TokenCounts {
    /// Whether the journal's counts for `counter` still have to be read (`remember`).
    pub(super) fn wants_journal(&self, counter: &str) -> bool {
        self.journal.is_none() || self.counter != counter
    }

    /// The journal's counts made with `counter`.
    pub(super) fn remember(&mut self, counter: &str, rows: Vec<(String, i64)>) {
        self.use_counter(counter);
        self.journal = Some(
            rows.into_iter()
                .map(|(sha, n)| (sha, usize::try_from(n).unwrap_or(usize::MAX)))
                .collect(),
        );
    }

    fn use_counter(&mut self, counter: &str) {
        if self.counter != counter {
            self.known.clear();
            self.journal = None;
            self.fresh.clear();
            self.counter = counter.to_owned();
        }
    }

    /// The counts to write with this call's record: (counter, [(digest, tokens)]).
    pub(super) fn take_fresh(&mut self) -> Option<(String, Vec<(String, i64)>)> {
        (!self.fresh.is_empty()).then(|| (self.counter.clone(), std::mem::take(&mut self.fresh)))
    }

    pub(super) fn count(
        &mut self,
        kind: context::Kind,
        messages: &Shared,
        counter: &dyn context::tokens::TokenCounter,
    ) -> usize {
        let texts = || messages.iter().map(Message::countable);
        let count = |texts: &[String]| -> usize { texts.iter().map(|t| counter.count(t) + 4).sum() };
        if !matches!(kind, context::Kind::History | context::Kind::RecentTurn) {
            return count(&texts().collect::<Vec<_>>());
        }
        self.use_counter(counter.name());
        let at = Arc::as_ptr(messages).cast::<Message>() as usize;
        if let Some((held, n)) = self.known.get(&at) {
            if Arc::ptr_eq(held, messages) {
                return *n;
            }
        }
        let texts: Vec<String> = texts().collect();
        let mut sha = crate::digest::Hasher::new();
        for t in &texts {
            sha.update(t.as_bytes());
            sha.update(b"\0");
        }
        let sha = sha.finish().to_string();
        let n = match self.journal.as_ref().and_then(|j| j.get(&sha)) {
            Some(n) => *n,
            None => {
                let n = count(&texts);
                if let Some(j) = self.journal.as_mut() {
                    j.insert(sha.clone(), n);
                }
                self.fresh.push((sha, i64::try_from(n).unwrap_or(i64::MAX)));
                n
            }
        };
        self.known.insert(at, (Arc::clone(messages), n));
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts bytes, and how many texts it was asked about.
    struct Tally(std::sync::atomic::AtomicUsize);

    impl context::tokens::TokenCounter for Tally {
        fn count(&self, text: &str) -> usize {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            text.len()
        }
        fn name(&self) -> &str {
            "tally"
        }
    }

    #[test]
    fn an_earlier_turn_handed_over_again_is_not_counted_again_and_a_new_one_is() {
        let tally = Tally(Default::default());
        let asked = || tally.0.load(std::sync::atomic::Ordering::Relaxed);
        let mut counts = TokenCounts::default();
        let turn: Shared = Arc::from(vec![Message::user("hello there")]);
        let n = counts.count(context::Kind::History, &turn, &tally);
        assert_eq!(asked(), 1);
        assert_eq!(counts.count(context::Kind::History, &Arc::clone(&turn), &tally), n);
        assert_eq!(asked(), 1, "the same turn, shared: known");
        // Other messages of the same length and count: another allocation, counted.
        let other: Shared = Arc::from(vec![Message::user("hello world")]);
        counts.count(context::Kind::History, &other, &tally);
        assert_eq!(asked(), 2);
        // The latest turn grows: counted every time.
        counts.count(context::Kind::Request, &turn, &tally);
        counts.count(context::Kind::Request, &turn, &tally);
        assert_eq!(asked(), 4);
        // What this attempt counted is written with the call; a new process reads it back and
        // knows the same turn (a new allocation, the same text) without counting it.
        let (name, fresh) = counts.take_fresh().unwrap_or_default();
        assert_eq!((name.as_str(), fresh.len()), ("tally", 2));
        assert!(counts.take_fresh().is_none(), "written once");
        let mut resumed = TokenCounts::default();
        assert!(resumed.wants_journal("tally"));
        resumed.remember("tally", fresh);
        assert!(!resumed.wants_journal("tally"));
        let again: Shared = Arc::from(vec![Message::user("hello there")]);
        assert_eq!(resumed.count(context::Kind::History, &again, &tally), n);
        assert_eq!(asked(), 4, "known from the journal");
        assert!(resumed.take_fresh().is_none());
        // Another counter's numbers are not used.
        assert!(resumed.wants_journal("other"));
    }
}
