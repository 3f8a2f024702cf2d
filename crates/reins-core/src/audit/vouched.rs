//! Which events a key vouches for (N13): verification checks each event's MAC against this
//! machine's audit key (`store::vouch`) as it walks the chain, and then judges the whole.
//!
//! - A MAC naming this key that does not hold is **forged**: made without the key, or moved from
//!   another event. Nothing accepts that.
//! - Once the log is keyed (from its first keyed event, or from where the keyring remembers it
//!   was), an event with no MAC is **unvouched**: appended by hand, or by a Reins process that
//!   could not reach the keyring. So is, on this machine's own SQLite file, an event under another
//!   key. A person may accept what is unvouched (`reins audit accept-unvouched`), with an event
//!   that this key vouches for.
//! - On a shared database each machine vouches for its own events: the others' are counted by
//!   key, and checked by running verification on their machines.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::verify::{Damage, DamageKind};
use crate::store::scan::EventRef;
use crate::store::vouch::{AuditKey, Check, ForVerify};

/// The kind of a person's acceptance of unvouched events.
const ACCEPTED: &str = "audit.unvouched_accepted";
/// Made again by the store, with no key at hand, when the anchor went missing: verification
/// already fails on it until a person accepts it, so it is not counted twice.
const ANCHOR_CREATED: &str = "audit.anchor_created";

/// Runs of consecutive seqs, `[first, last]`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ranges(Vec<(i64, i64)>);

impl Ranges {
    fn push(&mut self, seq: i64) {
        match self.0.last_mut() {
            Some((_, last)) if *last + 1 == seq => *last = seq,
            _ => self.0.push((seq, seq)),
        }
    }

    fn extend(&mut self, other: Ranges) {
        for (a, b) in other.0 {
            match self.0.last_mut() {
                Some((_, last)) if *last + 1 == a => *last = b,
                _ => self.0.push((a, b)),
            }
        }
    }

    /// The part at or after `from`: its first seq and how many.
    fn from(&self, from: i64) -> Option<(i64, i64)> {
        let mut first = None;
        let mut count = 0;
        for &(a, b) in &self.0 {
            if b < from {
                continue;
            }
            let a = a.max(from);
            first.get_or_insert(a);
            count += b - a + 1;
        }
        first.map(|f| (f, count))
    }
}

/// What a stretch of the walk saw of the MACs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Macs {
    /// MACs under this key that hold.
    own: i64,
    /// The first MAC under this key that does not.
    forged: Option<i64>,
    /// Events under other keys, by key id, and where they are.
    others: BTreeMap<String, i64>,
    foreign: Ranges,
    /// Events with no MAC, and where they are.
    unkeyed: Ranges,
    unkeyed_count: i64,
    first_keyed: Option<i64>,
    /// The last acceptance this key vouches for.
    accepted_at: Option<i64>,
}

impl Macs {
    /// Takes note of one event's MAC (`key`: this machine's, if the keyring gave it).
    pub(crate) fn see(&mut self, row: &EventRef<'_>, key: Option<&AuditKey>) {
        let Some(mac) = row.mac else {
            if row.kind != ANCHOR_CREATED {
                self.unkeyed.push(row.seq);
                self.unkeyed_count += 1;
            }
            return;
        };
        self.first_keyed.get_or_insert(row.seq);
        let Some(key) = key else { return };
        match key.check(row.hash, mac) {
            Check::Holds => {
                self.own += 1;
                if row.kind == ACCEPTED {
                    self.accepted_at = Some(row.seq);
                }
            }
            Check::Forged => {
                self.forged.get_or_insert(row.seq);
            }
            Check::Other(id) => {
                *self.others.entry(id.to_owned()).or_default() += 1;
                self.foreign.push(row.seq);
            }
        }
    }

    /// This stretch followed by `later`.
    pub(crate) fn then(mut self, later: Macs) -> Macs {
        self.own += later.own;
        self.forged = self.forged.or(later.forged);
        for (id, n) in later.others {
            *self.others.entry(id).or_default() += n;
        }
        self.foreign.extend(later.foreign);
        self.unkeyed.extend(later.unkeyed);
        self.unkeyed_count += later.unkeyed_count;
        self.first_keyed = self.first_keyed.or(later.first_keyed);
        self.accepted_at = later.accepted_at.or(self.accepted_at);
        self
    }
}

/// Events under one other key.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct KeyCount {
    pub id: String,
    pub events: i64,
}

/// What verification could say about the events' MACs.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct KeysView {
    /// `checked` (this machine's key checked every MAC it made), `unkeyed` (no event carries a
    /// MAC: written where no keyring could be reached) or `unchecked` (the keyring could not be
    /// read now, so no MAC was checked).
    pub status: &'static str,
    /// This machine's audit key's id.
    pub key_id: Option<String>,
    /// Events this key vouches for.
    pub vouched: i64,
    /// Events with no MAC (those before the log was keyed included).
    pub unkeyed: i64,
    /// The first keyed event: from there on every event needs a MAC.
    pub keyed_since: Option<i64>,
    /// Events under other machines' keys.
    pub others: Vec<KeyCount>,
    /// Events no key of this machine vouches for, past the last acceptance: the first and how
    /// many (what `reins audit accept-unvouched` would accept).
    pub unvouched_from: Option<i64>,
    pub unvouched: i64,
    /// Why no MAC was checked.
    pub detail: Option<String>,
}

/// Judges what the walk saw: the view, and the damage it shows (forged first).
pub(crate) fn judge(macs: Macs, keys: &ForVerify, shared: bool) -> (KeysView, Option<Damage>) {
    let key = keys.key.as_ref().map(Arc::as_ref);
    let first_keyed = match (&keys.since, macs.first_keyed) {
        (Some(s), Some(f)) => Some(s.seq.min(f)),
        (Some(s), None) => Some(s.seq),
        (None, f) => f,
    };
    let mut view = KeysView {
        status: match (key, &keys.unavailable, first_keyed) {
            (_, Some(_), _) => "unchecked",
            (_, None, None) => "unkeyed",
            (Some(_), None, Some(_)) => "checked",
            // Keyed, yet this keyring has no key: every MAC is another's.
            (None, None, Some(_)) => "unchecked",
        },
        key_id: key.map(|k| k.id().to_owned()),
        vouched: macs.own,
        unkeyed: macs.unkeyed_count,
        keyed_since: first_keyed,
        others: macs
            .others
            .iter()
            .map(|(id, n)| KeyCount {
                id: id.clone(),
                events: *n,
            })
            .collect(),
        detail: match (&keys.unavailable, key, first_keyed) {
            (Some(crate::keys::KeyError::Unavailable { detail }), _, _) => {
                Some(format!("the OS keyring is not available ({detail})"))
            }
            (Some(crate::keys::KeyError::Locked { detail }), _, _) => {
                Some(format!("the OS keyring is locked ({detail})"))
            }
            (Some(e), _, _) => Some(e.to_string()),
            (None, None, Some(_)) => Some(format!(
                "this keyring has no audit key ({:?}), so the log's MACs cannot be checked here",
                crate::store::vouch::KEY_NAME
            )),
            _ => None,
        },
        unvouched_from: None,
        unvouched: 0,
    };
    let Some(key) = key else {
        return (view, None);
    };
    if let Some(seq) = macs.forged {
        return (
            view,
            Some(Damage {
                seq: Some(seq),
                kind: DamageKind::Forged,
                detail: format!(
                    "the event at seq {seq} carries a MAC under this machine's audit key (id {}) that does not hold: it was appended or changed outside Reins, by someone without the key",
                    key.id()
                ),
            }),
        );
    }
    let Some(since) = first_keyed else {
        return (view, None);
    };
    let after = macs.accepted_at.map_or(since, |a| a.max(since));
    let unkeyed = macs.unkeyed.from(after);
    let foreign = if shared {
        None
    } else {
        macs.foreign.from(after)
    };
    let pending = match (unkeyed, foreign) {
        (Some(u), Some(f)) => Some((u.0.min(f.0), u.1 + f.1)),
        (u, f) => u.or(f),
    };
    view.unvouched_from = pending.map(|p| p.0);
    view.unvouched = pending.map_or(0, |p| p.1);
    let plural = |n: i64| crate::resume::plural(n.max(0) as u64, "event", "events");
    let verb = |n: i64| if n == 1 { ("carries", "it") } else { ("carry", "them") };
    let damage = match (unkeyed, foreign) {
        (Some((seq, n)), f) if f.is_none_or(|(first, _)| seq < first) => Some(Damage {
            seq: Some(seq),
            kind: DamageKind::Unvouched,
            detail: format!(
                "{} from seq {seq} on {} no MAC, though the log is keyed from seq {since}: appended outside Reins, or by a Reins process that could not reach the OS keyring. If you know why, accept {} with `reins audit accept-unvouched`",
                plural(n),
                verb(n).0,
                verb(n).1,
            ),
        }),
        (_, Some((seq, n))) => Some(Damage {
            seq: Some(seq),
            kind: DamageKind::Unvouched,
            detail: format!(
                "{} from seq {seq} on {} a MAC under another key than this machine's (id {}): the data dir came from another machine or OS user, or the keyring's audit key was replaced. If you know why, accept {} with `reins audit accept-unvouched`",
                plural(n),
                verb(n).0,
                key.id(),
                verb(n).1,
            ),
        }),
        _ => None,
    };
    (view, damage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_count_what_is_at_or_after_a_seq() {
        let mut r = Ranges::default();
        for s in [1, 2, 3, 7, 8, 20] {
            r.push(s);
        }
        assert_eq!(r.from(0), Some((1, 6)));
        assert_eq!(r.from(3), Some((3, 4)));
        assert_eq!(r.from(4), Some((7, 3)));
        assert_eq!(r.from(21), None);
        let mut later = Ranges::default();
        later.push(21);
        r.extend(later);
        assert_eq!(r.from(20), Some((20, 2)));
    }
}
