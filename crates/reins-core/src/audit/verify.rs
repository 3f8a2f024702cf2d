//! Walking the chain: every event must follow the one before it (seq + 1, `prev_hash` = its hash),
//! hash to what its own fields give, and agree with the head anchor kept outside the database. The
//! first event that does not is named with the kind of damage that explains it best.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use crate::store::Pool;

use crate::store::anchor::{AnchorError, Head, Mark};
use crate::store::audit::{AuditRow, GENESIS};
use crate::store::vouch::AuditKey;
use crate::store::{audit_read, scan, Store, StoreError};

use super::vouched::{self, KeysView, Macs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
// Two types named Damage reach the app\'s TypeScript; serde\'s container name is what specta uses.
#[serde(rename = "ChainDamageKind")]
pub enum DamageKind {
    /// An event's fields no longer give its hash.
    Edited,
    /// Events are missing from the middle.
    Deleted,
    /// Events are present but out of order.
    Reordered,
    /// The log ends before the head the anchor recorded.
    Truncated,
    /// The log is consistent on its own but is not the one the anchor recorded.
    Replaced,
    /// The anchor file cannot be read: nothing outside the database vouches for the head.
    AnchorUnreadable,
    /// The anchor went missing while the log had events and was made again: nothing vouched for
    /// the events before that, until a person accepts it (`reins audit acknowledge-anchor`).
    AnchorRecreated,
    /// Events past the anchor's head that are older than its last write: the writer would have
    /// included them, so they did not come through Reins' commit path.
    Unanchored,
    /// An event's MAC names this machine's audit key but does not hold: made without the key.
    Forged,
    /// Events of a keyed log that no key of this machine vouches for (no MAC, or another key's on
    /// this machine's own file), until a person accepts them (`reins audit accept-unvouched`).
    Unvouched,
}

impl DamageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DamageKind::Edited => "edited",
            DamageKind::Deleted => "deleted",
            DamageKind::Reordered => "reordered",
            DamageKind::Truncated => "truncated",
            DamageKind::Replaced => "replaced",
            DamageKind::AnchorUnreadable => "anchor_unreadable",
            DamageKind::AnchorRecreated => "anchor_recreated",
            DamageKind::Unanchored => "unanchored",
            DamageKind::Forged => "forged",
            DamageKind::Unvouched => "unvouched",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
// Two types named Damage reach the app\'s TypeScript; serde\'s container name is what specta uses.
#[serde(rename = "ChainDamage")]
pub struct Damage {
    /// The first seq that is not as it was written (None for an unreadable anchor).
    pub seq: Option<i64>,
    pub kind: DamageKind,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AnchorView {
    pub path: String,
    /// `agrees`, `behind` (a crash can leave it one write behind: fine), `ahead`, `disagrees`,
    /// `missing` (an empty log) or `unreadable`.
    pub status: &'static str,
    pub head: Option<Mark>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Verification {
    pub intact: bool,
    /// Events walked (up to the damage, if any).
    pub events: i64,
    /// The database's last event.
    pub head: Option<Mark>,
    pub anchor: AnchorView,
    pub damage: Option<Damage>,
    /// Seqs of `audit.anchor_created` events: before each, nothing outside the database vouched
    /// for the log, so a truncation then would have gone unseen.
    pub anchor_created_at: Vec<i64>,
    /// What the events' MACs say (N13).
    pub keys: KeysView,
    pub elapsed_ms: u64,
}

/// Verifies the whole chain of `store` against its anchor.
pub async fn verify(store: &Store) -> Result<Verification, StoreError> {
    verify_split(store, SPLIT_AT).await
}

/// `verify`, walking in two stretches when the log has at least `split_at` events.
pub(crate) async fn verify_split(store: &Store, split_at: i64) -> Result<Verification, StoreError> {
    let started = std::time::Instant::now();
    store.anchor().flush();
    let anchor = store.anchor().read();
    let anchor_path = store.anchor().path().display().to_string();
    let (anchor_head, unreadable) = match anchor {
        Ok(head) => (head, None),
        Err(AnchorError::Unreadable { detail, .. }) => (None, Some(detail)),
        Err(AnchorError::Io { source, .. }) => (None, Some(source.to_string())),
    };
    let mut keys = store.vouch().for_verify().await;
    if let Some(since) = keys.since.as_mut() {
        // The keyring remembers another log at this place: this one was made again, or rewritten
        // whole, without the key. Every event of it must then carry a MAC.
        if audit_read::hash_at(store.pool(), 1).await?.as_deref() != Some(since.first_hash.as_str()) {
            since.seq = 1;
        }
    }
    let walk = walk(store, anchor_head.as_ref(), split_at, keys.key.clone()).await?;
    let chained = walk.first_bad.is_none();
    let mut damage = match walk.first_bad {
        Some(bad) => Some(classify(store.pool(), bad).await?),
        None => None,
    };
    // The anchor names the earliest disagreement it can see; an internal break later than that is
    // a consequence.
    let replaced = walk.mark_mismatch.map(|(at, agreed)| Damage {
        seq: Some(agreed + 1),
        kind: DamageKind::Replaced,
        detail: format!(
            "the log differs from the head anchor at seq {at} (it agrees through seq {agreed}): events from seq {} on, at the latest from seq {at}, were rewritten",
            agreed + 1
        ),
    });
    if let Some(r) = replaced {
        if damage.as_ref().is_none_or(|d| d.seq > r.seq) {
            damage = Some(r);
        }
    }
    let head_seq = walk.head.as_ref().map_or(0, |h| h.seq);
    if damage.is_none() {
        if let Some(anchored) = anchor_head.as_ref().filter(|a| a.head.seq > head_seq) {
            damage = Some(Damage {
                seq: Some(head_seq + 1),
                kind: DamageKind::Truncated,
                detail: format!(
                    "the head anchor records seq {} (hash {}…); the log ends at seq {head_seq}: events from seq {} on are gone. If the database was replaced on purpose, move {anchor_path} aside",
                    anchored.head.seq,
                    &anchored.head.hash[..anchored.head.hash.len().min(12)],
                    head_seq + 1
                ),
            });
        }
    }
    if let (None, Some(detail)) = (&damage, &unreadable) {
        damage = Some(Damage {
            seq: None,
            kind: DamageKind::AnchorUnreadable,
            detail: format!("{anchor_path}: {detail}"),
        });
    }
    let status = match (&unreadable, &anchor_head) {
        (Some(_), _) => "unreadable",
        (None, None) => "missing",
        (None, Some(a)) => {
            // Against the table as it is, not only the part that chained.
            let max = audit_read::max_seq(store.pool()).await?;
            let at_head = audit_read::hash_at(store.pool(), a.head.seq).await?;
            if a.head.seq > max {
                "ahead"
            } else if walk.mark_mismatch.is_some() || at_head.as_deref() != Some(&a.head.hash) {
                "disagrees"
            } else if a.head.seq < max {
                "behind"
            } else {
                "agrees"
            }
        }
    };
    let anchor_created_at = audit_read::seqs_of_kind(store.pool(), "audit.anchor_created").await?;
    let (keys_view, unvouched) = vouched::judge(walk.macs, &keys, store.shared());
    if damage.is_none() && chained {
        damage = unvouched;
    }
    if damage.is_none() && status == "behind" {
        damage = unanchored(store, anchor_head.as_ref()).await?;
    }
    if damage.is_none() {
        damage = unacknowledged(store, &anchor_created_at).await?;
    }
    Ok(Verification {
        intact: damage.is_none(),
        events: walk.events,
        head: walk.head,
        anchor: AnchorView {
            path: anchor_path,
            status,
            head: anchor_head.map(|a| a.head),
        },
        damage,
        anchor_created_at,
        keys: keys_view,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// How much older than the anchor's last write an event past its head may be before it is taken
/// for one added by hand: the writer includes every head committed before it writes.
const WRITER_SLACK_MS: i64 = 2_000;

/// Events past the anchor's head that were in the log before the anchor was last written.
///
/// Not on a shared database: there other machines append events this machine's anchor never
/// sees, so only what the anchor did see (truncation, replacement) can be checked.
async fn unanchored(store: &Store, anchor: Option<&Head>) -> Result<Option<Damage>, StoreError> {
    let Some(anchor) = anchor else {
        return Ok(None);
    };
    if store.shared() {
        return Ok(None);
    }
    let Some((seq, at)) = audit_read::earliest_after(store.pool(), anchor.head.seq).await? else {
        return Ok(None);
    };
    if at >= anchor.updated_at - WRITER_SLACK_MS {
        return Ok(None);
    }
    Ok(Some(Damage {
        seq: Some(seq),
        kind: DamageKind::Unanchored,
        detail: format!(
            "events from seq {seq} on are dated before the head anchor was last written ({} ms later), yet the anchor never included them: they were added outside Reins",
            anchor.updated_at - at
        ),
    }))
}

/// The last re-creation of the anchor, unless a person has accepted it since.
async fn unacknowledged(store: &Store, created: &[i64]) -> Result<Option<Damage>, StoreError> {
    let Some(&at) = created.last() else {
        return Ok(None);
    };
    let acknowledged = audit_read::seqs_of_kind(store.pool(), "audit.anchor_acknowledged").await?;
    if acknowledged.iter().any(|a| *a > at) {
        return Ok(None);
    }
    Ok(Some(Damage {
        seq: Some(at),
        kind: DamageKind::AnchorRecreated,
        detail: format!(
            "the head anchor was missing while the log had {} events and was made again at seq {at}: nothing outside the database vouched for them, so a truncation then went unseen. If you know why (you moved it aside, or restored a backup), accept it with `reins audit acknowledge-anchor`",
            at - 1
        ),
    }))
}

/// Records that a person accepts the anchor's last re-creation; returns the seq accepted.
pub async fn acknowledge(store: &Store, by: &str) -> Result<Option<i64>, StoreError> {
    let created = audit_read::seqs_of_kind(store.pool(), "audit.anchor_created").await?;
    let Some(&seq) = created.last() else {
        return Ok(None);
    };
    super::record_by_user(
        store,
        crate::event::AnchorAcknowledged {
            created_at_seq: seq,
            by: by.to_owned(),
        },
    )
    .await?;
    Ok(Some(seq))
}

/// Records that a person accepts the events no key of this machine vouches for (and only
/// those: a log with other damage, or a forged MAC, is refused). Returns what was accepted
/// (`first seq`, `events`); None when nothing was unvouched.
pub async fn accept_unvouched(store: &Store, by: &str) -> Result<Option<(i64, i64)>, StoreError> {
    let mut keys = store.vouch().for_verify().await;
    if let Some(since) = keys.since.as_mut() {
        // The keyring remembers another log at this place: this one was made again, or rewritten
        // whole, without the key. Every event of it must then carry a MAC.
        if audit_read::hash_at(store.pool(), 1).await?.as_deref() != Some(since.first_hash.as_str()) {
            since.seq = 1;
        }
    }
    if keys.key.is_none() {
        return Err(StoreError::Conflict(format!(
            "accepting unvouched events needs this machine's audit key from the OS keyring, which vouches for the acceptance itself: {}",
            keys.unavailable
                .map(|e| e.to_string())
                .unwrap_or_else(|| "the keyring has no audit key yet".into())
        )));
    }
    let v = verify(store).await?;
    match &v.damage {
        None => return Ok(None),
        Some(d) if d.kind == DamageKind::Unvouched => {}
        Some(d) => {
            return Err(StoreError::Conflict(format!(
                "the log is damaged ({}{}): {}; only events that no key vouches for can be accepted",
                d.kind.as_str(),
                d.seq.map(|s| format!(" at seq {s}")).unwrap_or_default(),
                d.detail
            )))
        }
    }
    let (Some(first), events) = (v.keys.unvouched_from, v.keys.unvouched) else {
        return Ok(None);
    };
    super::record_by_user(
        store,
        crate::event::UnvouchedAccepted {
            first_seq: first,
            events,
            by: by.to_owned(),
        },
    )
    .await?;
    Ok(Some((first, events)))
}

/// The first event that does not chain: where the walk expected it and what it found.
struct Bad {
    expected_seq: i64,
    prev_hash: String,
    row: AuditRow,
}

struct Walk {
    events: i64,
    head: Option<Mark>,
    first_bad: Option<Bad>,
    /// The first anchor mark the log disagrees with, and the last seq it agreed through.
    mark_mismatch: Option<(i64, i64)>,
    macs: Macs,
}

/// One stretch of the chain, walked on its own thread.
struct Stretch {
    events: i64,
    last: Option<Mark>,
    first_bad: Option<Bad>,
    /// The first mark disagreed with, and the last agreed before it (0: none in this stretch).
    mismatch: Option<(i64, i64)>,
    last_agreed: i64,
    macs: Macs,
}

/// Below this many events one thread walks the whole chain.
const SPLIT_AT: i64 = 50_000;

/// Walks the chain in two stretches at once (the machine's two cores): the second starts from the
/// hash the first must end on, so together they check every link.
async fn walk(
    store: &Store,
    anchor: Option<&Head>,
    split_at: i64,
    key: Option<Arc<AuditKey>>,
) -> Result<Walk, StoreError> {
    let marks: BTreeMap<i64, String> = anchor
        .map(|a| {
            a.marks
                .iter()
                .chain(std::iter::once(&a.head))
                .map(|m| (m.seq, m.hash.clone()))
                .collect()
        })
        .unwrap_or_default();
    let max = audit_read::max_seq(store.pool()).await?;
    let middle = if max >= split_at {
        max / 2 + 1
    } else {
        i64::MAX
    };
    let boundary = audit_read::last_before(store.pool(), middle).await?;
    let db = store.scan_source()?;
    let joined = tokio::task::spawn_blocking(move || {
        std::thread::scope(|scope| {
            let second = (middle != i64::MAX).then(|| {
                let (db, marks, key) = (&db, &marks, key.as_deref());
                let start = boundary
                    .clone()
                    .map_or((1, GENESIS.to_owned()), |(s, h)| (s + 1, h));
                scope.spawn(move || stretch(db, middle, i64::MAX, start, marks, key))
            });
            let first = stretch(
                &db,
                i64::MIN,
                middle,
                (1, GENESIS.to_owned()),
                &marks,
                key.as_deref(),
            );
            let second = second.map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(StoreError::Invalid("the verification thread failed".into()))
                })
            });
            (first, second)
        })
    })
    .await
    .map_err(|e| StoreError::Invalid(format!("the verification task failed: {e}")))?;
    let first = joined.0?;
    let second = joined.1.transpose()?;
    // Past a break in the first stretch the second proves nothing.
    Ok(match second {
        Some(second) if first.first_bad.is_none() => Walk {
            events: first.events + second.events,
            head: second.last.or(first.last),
            first_bad: second.first_bad,
            mark_mismatch: first.mismatch.or(second
                .mismatch
                .map(|(at, agreed)| (at, agreed.max(first.last_agreed)))),
            macs: first.macs.then(second.macs),
        },
        _ => Walk {
            events: first.events,
            head: first.last,
            first_bad: first.first_bad,
            mark_mismatch: first.mismatch,
            macs: first.macs,
        },
    })
}

/// Walks seqs in `[lo, hi)`, expecting the first to be `start.0` chained to `start.1`.
fn stretch(
    db: &crate::store::scan::Source,
    lo: i64,
    hi: i64,
    start: (i64, String),
    marks: &BTreeMap<i64, String>,
    key: Option<&AuditKey>,
) -> Result<Stretch, StoreError> {
    let (mut expected, mut prev) = start;
    let mut out = Stretch {
        events: 0,
        last: None,
        first_bad: None,
        mismatch: None,
        last_agreed: 0,
        macs: Macs::default(),
    };
    let mut buf = Vec::with_capacity(1024);
    scan::events_between(db, lo, hi, |row| {
        if row.seq != expected || row.prev_hash != prev || !row.hash_holds_in(&mut buf) {
            out.first_bad = Some(Bad {
                expected_seq: expected,
                prev_hash: prev.clone(),
                row: row.to_owned_row(),
            });
            return Ok(false);
        }
        if let Some(anchored) = marks.get(&row.seq) {
            if *anchored == row.hash {
                out.last_agreed = row.seq;
            } else if out.mismatch.is_none() {
                out.mismatch = Some((row.seq, out.last_agreed));
            }
        }
        out.macs.see(&row, key);
        prev.clear();
        prev.push_str(row.hash);
        expected += 1;
        out.events += 1;
        Ok(true)
    })?;
    if out.events > 0 {
        out.last = Some(Mark {
            seq: expected - 1,
            hash: prev,
        });
    }
    Ok(out)
}

/// Names the damage at the first event that does not chain.
async fn classify(pool: &Pool, bad: Bad) -> Result<Damage, StoreError> {
    let Bad {
        expected_seq: e,
        prev_hash: prev,
        row,
    } = bad;
    if row.seq > e {
        let last = row.seq - 1;
        let range = if last == e {
            format!("seq {e} is")
        } else {
            format!("seqs {e}–{last} are")
        };
        return Ok(Damage {
            seq: Some(e),
            kind: DamageKind::Deleted,
            detail: format!(
                "{range} missing: the log jumps from seq {} to seq {}",
                e - 1,
                row.seq
            ),
        });
    }
    if row.prev_hash != prev {
        // The event that followed seq e-1 is still here, under another seq: moved.
        let moved = audit_read::follower_of(pool, &prev, row.seq).await?;
        if let Some(m) = moved {
            return Ok(Damage {
                seq: Some(e),
                kind: DamageKind::Reordered,
                detail: format!(
                    "the event at seq {e} does not follow seq {}; the one that did is now at seq {m}",
                    e - 1
                ),
            });
        }
        // Renumbered to close a gap: the event hashes under a later seq it was written with.
        let mut shifted = row.clone();
        for gap in 1..=64 {
            shifted.seq = row.seq + gap;
            if shifted.hash_holds() {
                return Ok(Damage {
                    seq: Some(e),
                    kind: DamageKind::Deleted,
                    detail: format!(
                        "{gap} event(s) before this one were removed and the rest renumbered: the event now at seq {e} was written as seq {}",
                        shifted.seq
                    ),
                });
            }
        }
        return Ok(Damage {
            seq: Some(e),
            kind: DamageKind::Edited,
            detail: format!(
                "the event at seq {e} ({}) does not link to the event before it",
                row.kind
            ),
        });
    }
    Ok(Damage {
        seq: Some(e),
        kind: DamageKind::Edited,
        detail: format!(
            "the event at seq {e} ({}) was changed after it was written: its fields no longer give its hash",
            row.kind
        ),
    })
}

/// Records a verification that found the log intact (a damaged log is evidence, and is not
/// written to).
pub async fn record(store: &Store, v: &Verification) -> Result<(), StoreError> {
    super::record_by_user(
        store,
        crate::event::AuditVerified {
            events: v.events,
            head: v.head.clone(),
            anchor: v.anchor.status.into(),
            elapsed_ms: v.elapsed_ms,
        },
    )
    .await
}
