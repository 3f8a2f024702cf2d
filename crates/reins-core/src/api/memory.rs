//! Profile memory: what the user (and, within limits, agents) asked Reins to remember.

use super::Reins;
use crate::error::Result;
use crate::memory::{self, FactDetail, NewFact, Remembered, Settings};
use crate::store::memory::{FactRow, SuggestionRow};

impl Reins {
    pub async fn memory_remember(&self, fact: NewFact) -> Result<Remembered> {
        Ok(memory::remember(self.store(), fact).await?)
    }

    pub async fn memory_edit(&self, id: &str, value: &str) -> Result<Remembered> {
        Ok(memory::edit(self.store(), id, value).await?)
    }

    pub async fn memory_list(
        &self,
        category: Option<&str>,
        search: Option<&str>,
    ) -> Result<Vec<FactRow>> {
        Ok(memory::list(self.store(), category, search).await?)
    }

    pub async fn memory_show(&self, id: &str) -> Result<FactDetail> {
        Ok(memory::show(self.store(), id).await?)
    }

    pub async fn memory_delete(&self, id: &str) -> Result<()> {
        Ok(memory::delete(self.store(), id).await?)
    }

    pub async fn memory_clear(&self) -> Result<(u64, u64)> {
        Ok(memory::clear(self.store()).await?)
    }

    pub async fn memory_suggestions(&self) -> Result<Vec<SuggestionRow>> {
        Ok(memory::suggestions(self.store()).await?)
    }

    pub async fn memory_accept(&self, id: &str) -> Result<Remembered> {
        Ok(memory::accept(self.store(), id).await?)
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
