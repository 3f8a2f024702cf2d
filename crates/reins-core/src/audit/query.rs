//! Paging through the log, newest first: `before` is the cursor (the seq after the last one shown).

use serde::{Deserialize, Serialize};

use super::Filter;
use crate::error::{Error, Result};
use crate::store::audit::AuditRow;
use crate::store::{Store, StoreError};

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 10_000;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
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
    let mut q = sqlx::QueryBuilder::new(
        "SELECT seq, at, actor, kind, run_id, step_seq, approval_id, payload, prev_hash, hash
         FROM audit_events WHERE 1 = 1",
    );
    req.filter.push_conditions(&mut q);
    let (cmp, order) = if req.oldest_first {
        (" AND seq > ", " ORDER BY seq ASC")
    } else {
        (" AND seq < ", " ORDER BY seq DESC")
    };
    if let Some(cursor) = req.before {
        q.push(cmp).push_bind(cursor);
    }
    q.push(order)
        .push(" LIMIT ")
        .push_bind(i64::from(limit) + 1);
    let mut events: Vec<AuditRow> = q
        .build_query_as()
        .fetch_all(store.pool())
        .await
        .map_err(StoreError::from)?;
    let more = events.len() > limit as usize;
    events.truncate(limit as usize);
    let next = if more {
        events.last().map(|e| e.seq)
    } else {
        None
    };
    Ok(Page { events, next })
}
