//! What a person sets for this machine and keeps between runs: the model provider new LLM runs use
//! (in the store's settings, shared by the app and the CLI), the team database the app opens and
//! what its alerts cover (files in the config dir, never in a shared database).

pub mod agents;
pub mod alerts;
pub mod budget;
pub mod provider;
pub mod runs;
pub mod team;

pub use agents::{AcpRunRequest, AgentEntry, AgentView, FoundAgent};
pub use alerts::{save_alert_scope, saved_alert_scope, AlertScope};
pub use runs::LlmRunRequest;
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
}
