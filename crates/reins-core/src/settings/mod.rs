//! What a person sets for this machine and keeps between runs: the model provider new LLM runs use
//! (in the store's settings, shared by the app and the CLI), the team database the app opens and
//! what its alerts cover (files in the config dir, never in a shared database).

pub mod agents;
pub mod alerts;
pub mod budget;
pub mod provider;
pub mod runs;
pub mod team;
pub mod telemetry;

pub use agents::{AcpRunRequest, AgentEntry, AgentView, FoundAgent};
pub use alerts::{save_alert_scope, saved_alert_scope, AlertScope};
pub use runs::LlmRunRequest;
pub use telemetry::{save_telemetry, saved_telemetry, TelemetryHeader, TelemetrySettings};
pub use provider::{ModelServerCheck, ProviderDefaults};
pub use team::{
    save_team_database, saved_team_database, TeamCheck, TeamDatabase, TeamView,
};

use crate::engine::Engine;

/// The settings that live in the store or need the keyring, over one engine.
pub struct Settings<'a> {
    e: &'a Engine,
}

impl<'a> Settings<'a> {
    pub fn new(e: &'a Engine) -> Self {
        Self { e }
    }

    /// Stores `values` (key, value) in one change, audited: `settings.changed` with the old and
    /// new value of each that changed.
    async fn save(&self, values: Vec<(&str, String)>) -> crate::error::Result<()> {
        use crate::store::{audit, audit::Actor, change::Change, write::Write};
        let rows = values
            .into_iter()
            .map(|(key, value)| Write::Setting {
                key: key.into(),
                value,
            })
            .collect();
        let change = Change::rows(rows).announcing(Box::new(|applied| {
            let changed = applied.written.settings.iter().cloned();
            changed
                .map(|(key, old, new)| {
                    let changed = crate::event::SettingChanged { key, old, new };
                    audit::Event::new(Actor::User, None, changed)
                })
                .collect()
        }));
        self.e.store().apply(None, change, None).await?;
        Ok(())
    }
}
