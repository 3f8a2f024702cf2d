//! LLM runs, questions and answers, context manifests, and API keys.

use std::sync::Arc;

use serde::Serialize;

use super::Reins;
use crate::error::Result;
use crate::ids::RunId;
use crate::keys::{KeyError, Secret};
use crate::store::runs;
use crate::view::{ContextView, UsageView};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct KeyStatus {
    pub name: String,
    pub set: bool,
}

impl Reins {
    /// The question a run waits on, if it waits on one: (step, question).
    pub async fn question(&self, id: RunId) -> Result<Option<(i64, String)>> {
        self.engine.question(id).await
    }

    /// Answers the question a run waits on; the run is queued to go on with it.
    pub async fn answer(&self, id: RunId, text: &str) -> Result<i64> {
        self.engine.answer(id, text).await
    }

    /// What went into each model call of a run, oldest first.
    pub async fn context(&self, id: RunId) -> Result<Vec<ContextView>> {
        self.views().context(id).await
    }

    pub async fn usage(&self, id: RunId) -> Result<UsageView> {
        self.views().usage(id).await
    }

    /// Stores an API key in the OS keyring under `name`.
    pub async fn keys_set(&self, name: &str, key: Secret) -> Result<()> {
        let store = Arc::clone(self.engine.secrets());
        let name = name.to_owned();
        Ok(crate::keys::off_thread(move || store.set(&name, &key)).await?)
    }

    /// Whether each named key is set (the keys themselves never leave the keyring here).
    pub async fn keys_status(&self, names: Vec<String>) -> Result<Vec<KeyStatus>> {
        let store = Arc::clone(self.engine.secrets());
        Ok(crate::keys::off_thread(move || {
            store.probe()?;
            names
                .into_iter()
                .map(|name| {
                    let set = store.get(&name)?.is_some();
                    Ok(KeyStatus { name, set })
                })
                .collect::<std::result::Result<Vec<_>, KeyError>>()
        })
        .await?)
    }

    /// Whether there was a key to delete.
    /// A key from the keyring, for the harness's own use (a TLS key of `reins serve`). Never for a
    /// face to show.
    pub async fn keys_get(&self, name: &str) -> Result<Option<Secret>> {
        let store = Arc::clone(self.engine.secrets());
        let name = name.to_owned();
        Ok(crate::keys::off_thread(move || store.get(&name)).await?)
    }

    pub async fn keys_delete(&self, name: &str) -> Result<bool> {
        let store = Arc::clone(self.engine.secrets());
        let name = name.to_owned();
        Ok(crate::keys::off_thread(move || store.delete(&name)).await?)
    }

    /// Key names runs in this data dir refer to (for `reins keys status`).
    pub async fn key_names_in_use(&self) -> Result<Vec<String>> {
        let specs = runs::specs(self.store().pool()).await?;
        let mut names: Vec<String> = specs
            .iter()
            .flat_map(|(kind, spec)| crate::agent::keys_of(kind, spec))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }
}
