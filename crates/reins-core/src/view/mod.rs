//! What the faces show: views made for the CLI, the app and HTTP, never storage rows, and the
//! queries that read them. Each view is built by a conversion that destructures its row, so a new
//! column is a compile error here rather than a field that silently never reaches a screen. JSON
//! the harness stored is already decoded; nothing a caller gets needs parsing.

mod alerts;
mod audit;
pub mod face;
mod memory;
mod models;
mod reviews;
mod runs;
mod turns;

pub use alerts::{Alert, Alerts};
pub use audit::{AuditEventView, AuditPage};
pub use memory::{FactDetailView, FactView, RememberedView, SuggestionView};
pub use models::{ContextView, UsageView};
pub use reviews::{ApprovalView, DecidedView, FactUse, GrantView};
pub use runs::{ActionView, IntentView, Recovery, RunDetail, RunSummary, StepView};
use turns::link_calls;
pub use turns::ModelTurnView;

use crate::engine::Engine;
use crate::error::Result;

/// The queries behind the views, over one engine's store.
pub struct Views<'a> {
    e: &'a Engine,
}

impl<'a> Views<'a> {
    pub fn new(e: &'a Engine) -> Self {
        Self { e }
    }

    /// Profile facts by id with their current text (None: deleted since).
    async fn facts_by_id(&self, ids: Vec<String>) -> Result<Vec<FactUse>> {
        let mut facts = Vec::new();
        for id in ids {
            let fact = match crate::store::memory::get(self.e.store().pool(), &id).await {
                Ok(f) => Some(format!("{}.{}: {}", f.category, f.key, f.value)),
                Err(crate::store::StoreError::NotFound { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            facts.push(FactUse { id, fact });
        }
        Ok(facts)
    }
}
