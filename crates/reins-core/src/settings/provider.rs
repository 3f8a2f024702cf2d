//! The model provider a new LLM run uses unless told otherwise, kept in the data dir's settings so
//! the desktop app and the CLI's users see the same choice. Only the key's *name* is stored.

use serde::{Deserialize, Serialize};

use super::Settings;
use crate::error::{Error, Result};
use crate::provider::{Client, Settings as ModelSettings, DEFAULT_BASE_URL, DEFAULT_MODEL};
use crate::store::memory as table;

const BASE_URL: &str = "provider.base_url";
const MODEL: &str = "provider.model";
const KEY: &str = "provider.key";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProviderDefaults {
    pub base_url: String,
    pub model: String,
    /// The keyring entry holding the API key; None: no key is sent (a local server).
    pub key: Option<String>,
}

impl ProviderDefaults {
    fn check(&self) -> Result<()> {
        let url = url::Url::parse(&self.base_url)
            .map_err(|e| Error::Invalid(format!("base URL {:?}: {e}", self.base_url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Error::Invalid(format!(
                "base URL {:?}: only http and https servers",
                self.base_url
            )));
        }
        if self.model.trim().is_empty() || self.model.len() > 200 {
            return Err(Error::Invalid(
                "the model name must be 1 to 200 characters".into(),
            ));
        }
        if let Some(k) = &self.key {
            crate::keys::check_name(k).map_err(Error::Invalid)?;
        }
        Ok(())
    }
}

/// Whether the model server new LLM runs use answers, and what it offers.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ModelServerCheck {
    pub base_url: String,
    /// The model new runs ask for.
    pub model: String,
    /// The server answered `GET /models`.
    pub answers: bool,
    /// The models it offers.
    pub models: Vec<String>,
    /// Whether `model` is among them.
    pub has_model: bool,
    /// Why not, with what to do.
    pub problem: Option<String>,
}

impl Settings<'_> {
    /// Asks the model server at `base_url` (default: the provider setting) for its models.
    pub async fn check_model_server(&self, base_url: Option<String>) -> Result<ModelServerCheck> {
        let defaults = self.provider_defaults().await?;
        let base_url = base_url.unwrap_or(defaults.base_url);
        let model = defaults.model;
        let mut check = ModelServerCheck {
            base_url: base_url.clone(),
            model: model.clone(),
            answers: false,
            models: Vec::new(),
            has_model: false,
            problem: None,
        };
        let key = match &defaults.key {
            Some(name) => {
                match crate::keys::get_blocking(std::sync::Arc::clone(self.e.secrets()), name)
                    .await
                {
                    Ok(Some(k)) => Some(k),
                    Ok(None) => {
                        check.problem = Some(format!(
                            "the API key {name} is not in the keyring (`reins keys set {name}`)"
                        ));
                        return Ok(check);
                    }
                    Err(e) => {
                        check.problem = Some(e.to_string());
                        return Ok(check);
                    }
                }
            }
            None => None,
        };
        let settings = ModelSettings {
            base_url,
            model: model.clone(),
            timeout_s: 10,
            ..ModelSettings::default()
        };
        let client = match Client::new(settings, key) {
            Ok(c) => c,
            Err(e) => {
                check.problem = Some(e.to_string());
                return Ok(check);
            }
        };
        match client.models().await {
            Ok(models) => {
                check.answers = true;
                check.has_model = models
                    .iter()
                    .any(|m| m == &model || m.strip_suffix(":latest") == Some(model.as_str()));
                if !check.has_model {
                    check.problem = Some(format!(
                        "the server does not offer {model} (for Ollama: `ollama pull {model}`; or choose another with --model or in Settings)"
                    ));
                }
                check.models = models;
            }
            Err(e) => {
                let hint = e.hint().map(|h| format!("; {h}")).unwrap_or_default();
                check.problem = Some(format!("{e}{hint}"));
            }
        }
        Ok(check)
    }
    pub async fn provider_defaults(&self) -> Result<ProviderDefaults> {
        let pool = self.e.store().pool();
        Ok(ProviderDefaults {
            base_url: table::setting(pool, BASE_URL)
                .await?
                .unwrap_or_else(|| DEFAULT_BASE_URL.into()),
            model: table::setting(pool, MODEL)
                .await?
                .unwrap_or_else(|| DEFAULT_MODEL.into()),
            key: table::setting(pool, KEY).await?.filter(|k| !k.is_empty()),
        })
    }

    /// Stores new defaults; the change is audited (`settings.changed`, old and new values).
    pub async fn set_provider_defaults(&self, new: &ProviderDefaults) -> Result<ProviderDefaults> {
        new.check()?;
        self.save(vec![
            (BASE_URL, new.base_url.trim().to_owned()),
            (MODEL, new.model.trim().to_owned()),
            (KEY, new.key.clone().unwrap_or_default()),
        ])
        .await?;
        self.provider_defaults().await
    }
}
