//! Paging through the log, newest first: `before` is the cursor (the seq after the last one shown).

use serde::{Deserialize, Serialize};

use crate::event::Filter;
use crate::error::{Error, Result};
use crate::store::audit::AuditRow;
use crate::store::{audit_read, Store};

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 10_000;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PageRequest {
    #[serde(default)]
    pub filter: Filter,
    /// Only events with a smaller seq (the previous page's `next`).
    #[serde(default)]
    pub before: Option<i64>,
    /// Oldest first instead (with `before` meaning "after").
    #[serde(default)]
    pub oldest_first: bool,
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct Page {
    pub events: Vec<AuditRow>,
    /// The cursor for the next page, when there is one.
    pub next: Option<i64>,
}

pub async fn page(store: &Store, req: &PageRequest) -> Result<Page> {
    req.filter.validate().map_err(Error::Invalid)?;
    let limit = req.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(Error::Invalid(format!(
            "--limit {limit}: between 1 and {MAX_LIMIT}"
        )));
    }
    // A family of kinds: one indexed page per kind, merged — a range over kinds cannot be read in
    // seq order from the index, and sorting a whole family is slow on a large log.
    let family = req.filter.kind.as_ref().filter(|k| !k.contains('.'));
    let mut events = match family {
        Some(family) => {
            let mut merged = Vec::new();
            for kind in audit_read::kinds_in(store.pool(), family).await? {
                let mut one = req.clone();
                one.filter.kind = Some(kind);
                merged.extend(rows(store, &one, limit).await?);
            }
            if req.oldest_first {
                merged.sort_by_key(|e| e.seq);
            } else {
                merged.sort_by_key(|e| std::cmp::Reverse(e.seq));
            }
            merged
        }
        None => rows(store, req, limit).await?,
    };
    let more = events.len() > limit as usize;
    events.truncate(limit as usize);
    let next = if more {
        events.last().map(|e| e.seq)
    } else {
        None
    };
    Ok(Page { events, next })
}

/// Up to `limit + 1` events for `req` (the extra one says there is a next page).
async fn rows(store: &Store, req: &PageRequest, limit: u32) -> Result<Vec<AuditRow>> {
    Ok(audit_read::page(
        store.pool(),
        &req.filter,
        req.before,
        req.oldest_first,
        i64::from(limit) + 1,
    )
    .await?)
}
