//! LLM runs, questions and answers, context manifests, and API keys.

use std::sync::Arc;

use serde::Serialize;

use super::{FactUse, Reins};
use crate::agent::llm::{Spec, DEFAULT_MAX_TURNS};
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::keys::{KeyError, Secret};
use crate::provider::{Price, Settings};
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

/// What a person asks an LLM run to do. Anything left out is decided here: the data dir's provider
/// defaults (Settings), then the built-in ones; the name is the goal's first words.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmRunRequest {
    pub goal: String,
    pub name: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The keyring entry holding the API key; None: the provider default (which may be none).
    pub key: Option<String>,
    pub context_window: Option<usize>,
    pub max_output: Option<usize>,
    pub temperature: Option<f32>,
    /// Seconds the server may stay silent (before the first byte, between chunks).
    pub timeout_s: Option<u64>,
    /// Most model calls the run makes, 1 to 1000.
    pub max_turns: Option<u32>,
    pub price: Option<Price>,
    /// Registered MCP servers whose tools the model is offered, by name.
    pub mcp: Vec<String>,
}

/// Most model calls a run may be given.
pub const MAX_TURNS_LIMIT: u32 = 1000;

/// A run's name from its goal: the first 60 characters (an ellipsis says there was more).
pub(crate) fn name_from_goal(goal: &str) -> String {
    let mut name: String = goal.trim().chars().take(60).collect();
    if goal.trim().chars().count() > 60 {
        name.push('…');
    }
    name
}

/// A run's goal, trimmed and not empty, and its name: the one given, else the goal's first words.
pub(crate) fn goal_and_name(goal: &str, name: Option<String>) -> Result<(String, String)> {
    let goal = goal.trim().to_owned();
    if goal.is_empty() {
        return Err(Error::Invalid(
            "the goal must not be empty: say what the agent should do".into(),
        ));
    }
    let name = match name.map(|n| n.trim().to_owned()) {
        Some(n) if !n.is_empty() => n,
        _ => name_from_goal(&goal),
    };
    Ok((goal, name))
}

impl Reins {
    /// The spec an LLM run is created with: the request, filled in with the defaults.
    pub async fn llm_spec(&self, req: LlmRunRequest) -> Result<Spec> {
        let (goal, name) = goal_and_name(&req.goal, req.name)?;
        let max_turns = req.max_turns.unwrap_or(DEFAULT_MAX_TURNS);
        if !(1..=MAX_TURNS_LIMIT).contains(&max_turns) {
            return Err(Error::Invalid(format!(
                "max turns {max_turns}: between 1 and {MAX_TURNS_LIMIT}"
            )));
        }
        let defaults = self.provider_defaults().await?;
        let built_in = Settings::default();
        Ok(Spec {
            name,
            goal,
            settings: Settings {
                base_url: req.base_url.unwrap_or(defaults.base_url),
                model: req.model.unwrap_or(defaults.model),
                key: req.key.or(defaults.key),
                context_window: req.context_window.unwrap_or(built_in.context_window),
                max_output: req.max_output.unwrap_or(built_in.max_output),
                temperature: req.temperature,
                timeout_s: req.timeout_s.unwrap_or(built_in.timeout_s),
                price: req.price,
            },
            max_turns,
            mcp: self.mcp_specs(&req.mcp)?,
        })
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
