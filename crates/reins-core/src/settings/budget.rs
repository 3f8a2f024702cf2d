//! The budget a new run gets where it names none: the Settings' default (kept in the store, so
//! the app and the CLI see the same), then `[budget]` in `policy.toml`; each limit on its own.

use super::Settings;
use crate::budget::Budget;
use crate::error::{Error, Result};
use crate::store::memory as table;

const DEFAULT: &str = "budget.default";

impl Settings<'_> {
    /// The Settings' default budget (empty: none).
    pub async fn default_budget(&self) -> Result<Budget> {
        match table::setting(self.e.store().pool(), DEFAULT).await? {
            None => Ok(Budget::default()),
            Some(text) if text.is_empty() => Ok(Budget::default()),
            Some(text) => serde_json::from_str(&text).map_err(|e| {
                Error::Invalid(format!(
                    "the stored default budget cannot be read ({e}); set it again in Settings or with `reins budget --default`"
                ))
            }),
        }
    }

    /// Stores a new default budget (empty: none); the change is audited.
    pub async fn set_default_budget(&self, new: &Budget) -> Result<Budget> {
        new.check().map_err(Error::Invalid)?;
        let value = if new.is_empty() {
            String::new()
        } else {
            serde_json::to_string(new).map_err(|e| Error::Invalid(e.to_string()))?
        };
        self.save(vec![(DEFAULT, value)]).await?;
        self.default_budget().await
    }

    /// What a new run may spend: each limit `given` names, else the Settings', else the policy's.
    pub async fn budget_for(&self, given: Budget) -> Result<Budget> {
        given.check().map_err(Error::Invalid)?;
        Ok(given
            .or(self.default_budget().await?)
            .or(self.e.policy().budget()))
    }
}
