//! The model provider a new LLM run uses unless told otherwise, kept in the data dir's settings so
//! the desktop app and the CLI's users see the same choice. Only the key's *name* is stored.

use serde::{Deserialize, Serialize};

use super::Reins;
use crate::error::{Error, Result};
use crate::provider::{DEFAULT_BASE_URL, DEFAULT_MODEL};
use crate::store::{audit, audit::Actor, memory as table, StoreError};

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

impl Reins {
    pub async fn provider_defaults(&self) -> Result<ProviderDefaults> {
        let pool = self.store().pool();
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
        let now = crate::clock::now_ms();
        let mut tx = self.store().begin().await?;
        let values = [
            (BASE_URL, new.base_url.trim().to_owned()),
            (MODEL, new.model.trim().to_owned()),
            (KEY, new.key.clone().unwrap_or_default()),
        ];
        for (key, value) in values {
            let old = table::set_setting(&mut tx, key, &value, now).await?;
            if old.as_deref() != Some(value.as_str()) {
                audit::append(
                    &mut tx,
                    audit::Event::new(
                        Actor::User,
                        None,
                        crate::audit::event::SettingChanged {
                            key: key.into(),
                            old,
                            new: value,
                        },
                    ),
                    now,
                )
                .await?;
            }
        }
        tx.commit().await.map_err(StoreError::from)?;
        self.provider_defaults().await
    }
}
