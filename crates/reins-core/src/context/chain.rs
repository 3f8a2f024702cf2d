//! A long run's manifests kept in O(what changed): a manifest is a function of its candidates and
//! its budget, and from one model call to the next the candidates barely change (a turn is added,
//! the last request becomes a recent turn, every earlier turn is a turn older). So a call's record
//! keeps only the candidates that differ from the previous call's, and reading it replays the
//! chain and assembles again: the same pure function, the same manifest, exactly.
//!
//! A record names the call it builds on and when that call's record was written, so a record of an
//! abandoned branch (a run resumed from an older checkpoint writes those steps again) is known for
//! what it is instead of being rebuilt on the wrong base.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::{assemble, Budget, ContextError, Digest, Item, Kind, Manifest};

/// What the assembler needs of one candidate to decide its fate: everything but its text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Candidate {
    pub id: String,
    pub kind: Kind,
    pub tokens: usize,
    pub relevance: f32,
    pub importance: f32,
    pub age: u32,
    pub continuity: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// Its digest's tokens, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<usize>,
}

impl Candidate {
    pub fn of(item: &Item) -> Candidate {
        Candidate {
            id: item.id.clone(),
            kind: item.kind,
            tokens: item.tokens,
            relevance: item.relevance,
            importance: item.importance,
            age: item.age,
            continuity: item.continuity,
            version: item.version,
            digest: item.digest.as_ref().map(|d| d.tokens),
        }
    }

    fn item(&self) -> Item {
        Item {
            id: self.id.clone(),
            kind: self.kind,
            text: String::new(),
            tokens: self.tokens,
            relevance: self.relevance,
            importance: self.importance,
            age: self.age,
            continuity: self.continuity,
            version: self.version,
            digest: self.digest.map(|tokens| Digest {
                text: String::new(),
                tokens,
                artifact: String::new(),
            }),
        }
    }

    /// The candidate one call later, had nothing but its age changed.
    fn aged(&self, turns: u32) -> Candidate {
        let mut c = self.clone();
        if c.age > 0 {
            c.age = c.age.saturating_add(turns);
        }
        c
    }
}

/// The call a record builds on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Base {
    pub step: i64,
    /// When the base's record was written: a base written again since is another call.
    pub written_at: i64,
}

/// A candidate that was not in the base, and where it goes in the list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Added {
    pub at: usize,
    pub candidate: Candidate,
}

/// One model call's context as kept: its budget, and its candidates as a change to its base's
/// (all of them, added in order, when it has none).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Delta {
    pub base: Option<Base>,
    pub budget: Budget,
    pub counter: String,
    /// Every carried candidate older than this turn is this many turns older.
    pub aged: u32,
    pub dropped: Vec<String>,
    /// Carried candidates that changed otherwise (kind, tokens, scores' inputs, digest), whole.
    pub changed: Vec<Candidate>,
    pub added: Vec<Added>,
    /// Checks on the rebuild: the candidates' number and the tokens that went in.
    pub count: usize,
    pub used: usize,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ChainError {
    #[error("its base (step {0}) was written again since: it belongs to an abandoned branch")]
    Replaced(i64),
    #[error("{0}")]
    Broken(String),
    #[error(transparent)]
    Context(#[from] ContextError),
}

/// One call's candidates, as the next call's record refers to them.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub base: Base,
    pub candidates: Vec<Candidate>,
}

/// A model call's context as stored: whole (a brief, and every record written before chains), or
/// as a change to the previous call's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Record {
    Chained { delta: Box<Delta> },
    Whole(Manifest),
}

impl Delta {
    /// The record of a call with `candidates` (in the order the assembler got them) and the
    /// manifest it made, against the previous call's link (whole when there is none, or when the
    /// list was reordered).
    pub fn between(
        prev: Option<&Link>,
        budget: Budget,
        counter: &str,
        candidates: &[Candidate],
        manifest: &Manifest,
    ) -> Delta {
        let whole = || Delta {
            base: None,
            budget,
            counter: counter.to_owned(),
            aged: 0,
            dropped: Vec::new(),
            changed: Vec::new(),
            added: candidates
                .iter()
                .enumerate()
                .map(|(at, c)| Added {
                    at,
                    candidate: c.clone(),
                })
                .collect(),
            count: candidates.len(),
            used: manifest.used,
        };
        let Some(prev) = prev else {
            return whole();
        };
        let unique = |list: &[Candidate]| {
            let mut seen = HashSet::with_capacity(list.len());
            list.iter().all(|c| seen.insert(c.id.as_str()))
        };
        if !unique(candidates) || !unique(&prev.candidates) {
            return whole();
        }
        let before: HashMap<&str, &Candidate> =
            prev.candidates.iter().map(|c| (c.id.as_str(), c)).collect();
        let now: HashSet<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
        // How much older the carried candidates are: the most common step among them.
        let mut steps: HashMap<u32, usize> = HashMap::new();
        for c in candidates {
            if let Some(b) = before.get(c.id.as_str()).filter(|b| b.age > 0) {
                *steps.entry(c.age.wrapping_sub(b.age)).or_default() += 1;
            }
        }
        let aged = steps
            .into_iter()
            .max_by_key(|&(step, n)| (n, std::cmp::Reverse(step)))
            .map_or(0, |(step, _)| step);
        let mut delta = Delta {
            base: Some(prev.base),
            budget,
            counter: counter.to_owned(),
            aged,
            dropped: prev
                .candidates
                .iter()
                .filter(|c| !now.contains(c.id.as_str()))
                .map(|c| c.id.clone())
                .collect(),
            changed: Vec::new(),
            added: Vec::new(),
            count: candidates.len(),
            used: manifest.used,
        };
        for (at, c) in candidates.iter().enumerate() {
            match before.get(c.id.as_str()) {
                Some(b) if b.aged(aged) == *c => {}
                Some(_) => delta.changed.push(c.clone()),
                None => delta.added.push(Added {
                    at,
                    candidate: c.clone(),
                }),
            }
        }
        // Carried candidates must keep their order, or the record is kept whole.
        let carried_now = candidates.iter().filter(|c| before.contains_key(c.id.as_str()));
        let carried_before = prev
            .candidates
            .iter()
            .filter(|c| now.contains(c.id.as_str()));
        if !carried_now.map(|c| &c.id).eq(carried_before.map(|c| &c.id)) {
            return whole();
        }
        delta
    }

    /// The call's candidates, from its base's (none when the record is whole).
    pub fn candidates(&self, base: Option<&Link>) -> Result<Vec<Candidate>, ChainError> {
        let mut list: Vec<Candidate> = match (&self.base, base) {
            (None, _) => Vec::new(),
            (Some(want), Some(link)) if link.base == *want => {
                let dropped: HashSet<&str> = self.dropped.iter().map(String::as_str).collect();
                let changed: HashMap<&str, &Candidate> =
                    self.changed.iter().map(|c| (c.id.as_str(), c)).collect();
                link.candidates
                    .iter()
                    .filter(|c| !dropped.contains(c.id.as_str()))
                    .map(|c| match changed.get(c.id.as_str()) {
                        Some(n) => (*n).clone(),
                        None => c.aged(self.aged),
                    })
                    .collect()
            }
            (Some(want), _) => return Err(ChainError::Replaced(want.step)),
        };
        for a in &self.added {
            if a.at > list.len() {
                return Err(ChainError::Broken(format!(
                    "{} goes in at {} of {}",
                    a.candidate.id,
                    a.at,
                    list.len()
                )));
            }
            list.insert(a.at, a.candidate.clone());
        }
        if list.len() != self.count {
            return Err(ChainError::Broken(format!(
                "{} candidates rebuilt where {} were kept",
                list.len(),
                self.count
            )));
        }
        Ok(list)
    }

    /// The call's manifest as it was made, and the link the next record refers to.
    pub fn rebuild(
        &self,
        base: Option<&Link>,
        this: Base,
    ) -> Result<(Manifest, Link), ChainError> {
        let candidates = self.candidates(base)?;
        let items = candidates.iter().map(Candidate::item).collect();
        let manifest = assemble(self.budget, items, &self.counter)?.manifest;
        if manifest.used != self.used {
            return Err(ChainError::Broken(format!(
                "the rebuilt context uses {} tokens where {} were kept",
                manifest.used, self.used
            )));
        }
        let link = Link {
            base: this,
            candidates,
        };
        Ok((manifest.for_the_record(), link))
    }
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;
