//! What a run's model calls took in and cost: each call's context manifest, with the profile
//! facts it used as they read now, and the run's token usage.

use serde::Serialize;

use super::{FactUse, Views};
use crate::error::Result;
use crate::ids::RunId;
use crate::store::{manifests, runs, steps};

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
    /// What went into each model call of a run, oldest first.
    pub async fn context(&self, id: RunId) -> Result<Vec<ContextView>> {
        runs::get(self.e.store().pool(), id).await?;
        let mut out = Vec::new();
        for row in manifests::list(self.e.store().pool(), id).await? {
            let facts = self.facts_by_id(row.facts_used).await?;
            out.push(ContextView {
                step: row.step_seq,
                model: row.model,
                created_at: row.created_at,
                manifest: row.manifest,
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
