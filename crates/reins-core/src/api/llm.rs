//! LLM runs, questions and answers, context manifests, and API keys.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::Reins;
use crate::agent::llm::Spec;
use crate::engine::{Observer, Progress};
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::keys::{KeyError, Secret, SecretStore};
use crate::store::{manifests, runs, steps};
use crate::workspace::Workspace;

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

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FactUse {
    pub id: String,
    pub fact: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct KeyStatus {
    pub name: String,
    pub set: bool,
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

impl Reins {
    /// Uses `secrets` for API keys instead of the OS keyring (tests, or an embedding app's own).
    pub fn with_secrets(self, secrets: Arc<dyn SecretStore>) -> Self {
        Self {
            engine: self.engine.with_secrets(secrets),
            ..self
        }
    }

    /// Creates a queued LLM run on a workspace folder.
    pub async fn create_llm_run(
        &self,
        spec: &Spec,
        workspace: &Path,
        observer: &dyn Observer,
    ) -> Result<RunId> {
        if spec.goal.trim().is_empty() {
            return Err(Error::Invalid("the goal must not be empty".into()));
        }
        let ws = Workspace::open(workspace).map_err(|e| Error::Invalid(e.to_string()))?;
        if let Some(name) = &spec.settings.key {
            // Said now, not after the run has started: the key must exist.
            let store = Arc::clone(self.engine.secrets());
            if crate::keys::get_blocking(store, name).await?.is_none() {
                return Err(KeyError::Missing(name.clone()).into());
            }
        }
        let id = self.engine.create_llm_run(spec, &ws).await?;
        observer.on(&Progress::Created {
            run: id,
            name: spec.name.clone(),
            workspace: ws.root().display().to_string(),
        });
        Ok(id)
    }

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
        runs::get(self.store().pool(), id).await?;
        let mut out = Vec::new();
        for row in manifests::list(self.store().pool(), id).await? {
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

    /// Profile facts by id with their current text (None: deleted since).
    pub(super) async fn facts_by_id(&self, ids: Vec<String>) -> Result<Vec<FactUse>> {
        let mut facts = Vec::new();
        for id in ids {
            let fact = match crate::store::memory::get(self.store().pool(), &id).await {
                Ok(f) => Some(format!("{}.{}: {}", f.category, f.key, f.value)),
                Err(crate::store::StoreError::NotFound { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            facts.push(FactUse { id, fact });
        }
        Ok(facts)
    }

    pub async fn usage(&self, id: RunId) -> Result<UsageView> {
        let (calls, tin, tout, cost) = steps::usage(self.store().pool(), id).await?;
        Ok(UsageView {
            model_calls: calls,
            tokens_in: tin,
            tokens_out: tout,
            cost_usd: cost.map(|c| c as f64 / 1_000_000.0),
        })
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
    pub async fn keys_delete(&self, name: &str) -> Result<bool> {
        let store = Arc::clone(self.engine.secrets());
        let name = name.to_owned();
        Ok(crate::keys::off_thread(move || store.delete(&name)).await?)
    }

    /// Key names runs in this data dir refer to (for `reins keys status`).
    pub async fn key_names_in_use(&self) -> Result<Vec<String>> {
        let specs = runs::specs_of_kind(self.store().pool(), crate::agent::llm::KIND).await?;
        let mut names: Vec<String> = specs
            .iter()
            .filter_map(|s| Spec::from_json(s).ok()?.settings.key)
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }
}
