//! What a run's model calls took in and cost: each call's context manifest, with the profile
//! facts it used as they read now, and the run's token usage.

use serde::Serialize;

use super::{FactUse, Views};
use crate::context::chain::{Base, ChainError, Link, Record};
use crate::error::Result;
use crate::ids::RunId;
use crate::store::{manifests, runs, steps, StoreError};

/// One model call's context, as `reins show RUN --context` prints it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ContextView {
    pub step: i64,
    pub model: String,
    pub created_at: i64,
    pub manifest: crate::context::Manifest,
    /// The profile facts it used, with their current text (None: the fact was deleted since).
    pub facts: Vec<FactUse>,
}

/// Model usage of a run.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UsageView {
    pub model_calls: i64,
    pub tokens_in: i64,
    pub tokens_out: i64,
    pub cost_usd: Option<f64>,
}

impl Views<'_> {
    /// What went into each model call of a run, oldest first. A record kept as a change to the
    /// call before is rebuilt from it; one of an abandoned branch (its base was written again
    /// when the run was resumed from an older checkpoint) is left out.
    pub async fn context(&self, id: RunId) -> Result<Vec<ContextView>> {
        runs::get(self.e.store().pool(), id).await?;
        let mut out = Vec::new();
        let mut last: Option<Link> = None;
        for row in manifests::list(self.e.store().pool(), id).await? {
            let manifest = match row.manifest {
                Record::Whole(m) => m,
                Record::Chained { delta } => {
                    let this = Base {
                        step: row.step_seq,
                        written_at: row.created_at,
                    };
                    match delta.rebuild(last.as_ref(), this) {
                        Ok((m, link)) => {
                            last = Some(link);
                            m
                        }
                        Err(ChainError::Replaced(_)) => continue,
                        Err(e) => {
                            return Err(StoreError::Damaged {
                                table: "context_manifests",
                                row: format!("{id}, step {}", row.step_seq),
                                detail: format!("its context cannot be rebuilt: {e}"),
                            }
                            .into())
                        }
                    }
                }
            };
            let facts = self.facts_by_id(row.facts_used).await?;
            out.push(ContextView {
                step: row.step_seq,
                model: row.model,
                created_at: row.created_at,
                manifest,
                facts,
            });
        }
        Ok(out)
    }

    pub async fn usage(&self, id: RunId) -> Result<UsageView> {
        let (calls, tin, tout, cost) = steps::usage(self.e.store().pool(), id).await?;
        Ok(UsageView {
            model_calls: calls,
            tokens_in: tin,
            tokens_out: tout,
            cost_usd: cost.map(|c| c as f64 / 1_000_000.0),
        })
    }
}
