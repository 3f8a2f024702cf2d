//! Profile memory: what the user (and, within limits, agents) asked Reins to remember.

use super::{FactDetailView, FactView, Reins, RememberedView, SuggestionView};
use crate::error::Result;
use crate::memory::{self, NewFact, Settings};

impl Reins {
    pub async fn memory_remember(&self, fact: NewFact) -> Result<RememberedView> {
        Ok(memory::remember(self.store(), fact).await?.into())
    }

    pub async fn memory_edit(&self, id: &str, value: &str) -> Result<RememberedView> {
        Ok(memory::edit(self.store(), id, value).await?.into())
    }

    pub async fn memory_list(
        &self,
        category: Option<&str>,
        search: Option<&str>,
    ) -> Result<Vec<FactView>> {
        Ok(memory::list(self.store(), category, search)
            .await?
            .into_iter()
            .map(FactView::from)
            .collect())
    }

    pub async fn memory_show(&self, id: &str) -> Result<FactDetailView> {
        Ok(memory::show(self.store(), id).await?.into())
    }

    pub async fn memory_delete(&self, id: &str) -> Result<()> {
        Ok(memory::delete(self.store(), id).await?)
    }

    /// Deletes every fact and suggestion: (facts, suggestions) removed.
    pub async fn memory_clear(&self) -> Result<(u64, u64)> {
        Ok(memory::clear(self.store()).await?)
    }

    pub async fn memory_suggestions(&self) -> Result<Vec<SuggestionView>> {
        Ok(memory::suggestions(self.store())
            .await?
            .into_iter()
            .map(SuggestionView::from)
            .collect())
    }

    pub async fn memory_accept(&self, id: &str) -> Result<RememberedView> {
        Ok(memory::accept(self.store(), id).await?.into())
    }

    pub async fn memory_dismiss(&self, id: &str) -> Result<()> {
        Ok(memory::dismiss(self.store(), id).await?)
    }

    pub async fn memory_settings(&self) -> Result<Settings> {
        Ok(memory::settings(self.store()).await?)
    }

    pub async fn memory_configure(
        &self,
        enabled: Option<bool>,
        threshold: Option<f64>,
        categories: Option<Vec<String>>,
    ) -> Result<Settings> {
        Ok(memory::configure(self.store(), enabled, threshold, categories).await?)
    }
}
