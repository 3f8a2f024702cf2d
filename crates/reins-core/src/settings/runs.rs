//! What a new run is created with when a person leaves things out: an LLM run's model settings from
//! the provider defaults, an agent's goal and name, and the registered MCP servers whose tools a
//! run offers (`mcp_servers.toml` in the config dir).

use std::path::PathBuf;

use super::Settings;
use crate::agent::llm::{Spec, DEFAULT_MAX_TURNS};
use crate::error::{Error, Result};
use crate::mcp::{ServerSpec, SERVERS_FILE};
use crate::provider::{Price, Settings as ModelSettings};

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
pub fn name_from_goal(goal: &str) -> String {
    let mut name: String = goal.trim().chars().take(60).collect();
    if goal.trim().chars().count() > 60 {
        name.push('…');
    }
    name
}

/// A run's goal, trimmed and not empty, and its name: the one given, else the goal's first words.
pub fn goal_and_name(goal: &str, name: Option<String>) -> Result<(String, String)> {
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

impl Settings<'_> {
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
        let built_in = ModelSettings::default();
        Ok(Spec {
            name,
            goal,
            settings: ModelSettings {
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
            mcp: mcp_specs(&req.mcp)?,
        })
    }
}

fn mcp_file() -> Result<PathBuf> {
    Ok(crate::data_dir::config_dir()?.join(SERVERS_FILE))
}

/// The registered MCP servers, by name.
pub fn mcp_servers() -> Result<Vec<ServerSpec>> {
    Ok(crate::mcp::server::registered(&mcp_file()?)?)
}

/// Registers an MCP server under a new name. Its keys need not exist yet (a run checks).
pub fn add_mcp_server(mut spec: ServerSpec) -> Result<()> {
    spec.may_write = crate::contain::reach::writable_places(&spec.may_write)
        .map_err(|e| crate::error::Error::Invalid(format!("the server {e}")))?;
    Ok(crate::mcp::server::register(&mcp_file()?, spec)?)
}

/// Unregisters an MCP server; false when none had the name. Runs keep what they started with.
pub fn remove_mcp_server(name: &str) -> Result<bool> {
    Ok(crate::mcp::server::unregister(&mcp_file()?, name)?)
}

/// The registered servers named, in order, once each; an unknown name is an error naming them.
pub fn mcp_specs(names: &[String]) -> Result<Vec<ServerSpec>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let all = mcp_servers()?;
    let mut out: Vec<ServerSpec> = Vec::new();
    for name in names {
        if out.iter().any(|s| &s.name == name) {
            continue;
        }
        match all.iter().find(|s| &s.name == name) {
            Some(s) => out.push(s.clone()),
            None => {
                let known: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
                return Err(Error::Invalid(if known.is_empty() {
                    format!("no MCP server named {name:?} is registered; `reins mcp add {name} -- PROGRAM ARGS…` registers one")
                } else {
                    format!(
                        "no MCP server named {name:?} is registered (registered: {})",
                        known.join(", ")
                    )
                }));
            }
        }
    }
    Ok(out)
}
