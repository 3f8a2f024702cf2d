//! What a person sets for this machine: the model provider, the team database, what the alerts
//! cover (see `settings`).

use super::Reins;
use crate::agent::acp::Spec as AcpSpec;
use crate::agent::llm::Spec as LlmSpec;
use crate::error::Result;
use crate::mcp::ServerSpec;
use crate::settings::{
    agents, runs, AcpRunRequest, AgentEntry, FoundAgent, LlmRunRequest, ModelServerCheck,
    ProviderDefaults, TeamCheck, TeamDatabase, TeamView,
};

impl Reins {
    pub(super) fn settings(&self) -> crate::settings::Settings<'_> {
        crate::settings::Settings::new(&self.engine)
    }

    /// Asks the model server at `base_url` (default: the provider setting) for its models.
    pub async fn check_model_server(&self, base_url: Option<String>) -> Result<ModelServerCheck> {
        self.settings().check_model_server(base_url).await
    }

    pub async fn provider_defaults(&self) -> Result<ProviderDefaults> {
        self.settings().provider_defaults().await
    }

    /// Stores new defaults; the change is audited (`settings.changed`, old and new values).
    pub async fn set_provider_defaults(&self, new: &ProviderDefaults) -> Result<ProviderDefaults> {
        self.settings().set_provider_defaults(new).await
    }

    /// Whether this process works on a shared team database (not this machine's own file).
    pub fn shared(&self) -> bool {
        self.store().shared()
    }

    /// The name this machine goes by in runs and decisions.
    pub fn this_machine(&self) -> String {
        crate::worker::host_name()
    }

    /// What the Team database panel shows.
    pub async fn team_view(&self) -> Result<TeamView> {
        let connected = self.shared().then(|| self.database().display().to_string());
        Ok(TeamView {
            connected,
            saved: crate::settings::saved_team_database()?,
            from_environment: std::env::var_os("REINS_DATABASE_URL").is_some_and(|v| !v.is_empty()),
            wake_ups: self.engine.wake_ups().await.into(),
            machine: self.this_machine(),
            alerts: crate::settings::saved_alert_scope()?,
        })
    }

    /// Connects to `db` (its password from the keyring when it names an entry) and reads its
    /// schema version, changing nothing there.
    pub async fn check_team_database(&self, db: &TeamDatabase) -> Result<TeamCheck> {
        self.settings().check_team_database(db).await
    }

    /// The spec an LLM run is created with: the request, filled in with the defaults.
    pub async fn llm_spec(&self, req: LlmRunRequest) -> Result<LlmSpec> {
        self.settings().llm_spec(req).await
    }

    /// The spec an ACP run is created with: a registered agent's, or the command line's.
    pub fn acp_spec(&self, req: AcpRunRequest) -> Result<AcpSpec> {
        agents::acp_spec(req)
    }

    /// The registered agents, by name.
    pub fn agents(&self) -> Result<Vec<AgentEntry>> {
        agents::agents()
    }

    /// Registers an agent under a new name.
    pub fn add_agent(&self, entry: AgentEntry) -> Result<()> {
        agents::add_agent(entry)
    }

    /// The agents Reins knows how to start that are on this process's `PATH`, with whether one of
    /// that name is registered already.
    pub fn agents_on_path(&self) -> Result<Vec<(FoundAgent, bool)>> {
        agents::agents_on_path()
    }

    /// Registers the agent `name` found on `PATH`, as found (never a command from the caller).
    pub fn register_found_agent(&self, name: &str) -> Result<FoundAgent> {
        agents::register_found_agent(name)
    }

    /// Unregisters an agent; false when none had the name.
    pub fn remove_agent(&self, name: &str) -> Result<bool> {
        agents::remove_agent(name)
    }

    /// The registered MCP servers, by name.
    pub fn mcp_servers(&self) -> Result<Vec<ServerSpec>> {
        runs::mcp_servers()
    }

    /// Registers an MCP server under a new name. Its keys need not exist yet (a run checks).
    pub fn add_mcp_server(&self, spec: ServerSpec) -> Result<()> {
        runs::add_mcp_server(spec)
    }

    /// Unregisters an MCP server; false when none had the name. Runs keep what they started with.
    pub fn remove_mcp_server(&self, name: &str) -> Result<bool> {
        runs::remove_mcp_server(name)
    }
}
