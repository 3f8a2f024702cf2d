//! External agents (ACP): the ones a person registered by name, and runs of them. Registered agents
//! live in `agents.toml` in the config dir, which agents may not write (it is a protected path).
//! An agent's secrets are named there (variable → keyring entry), never held.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::runs::goal_and_name;
pub use crate::agent::acp::known::FoundAgent;
use crate::agent::acp::{Spec, DEFAULT_IDLE_TIMEOUT_S};
use crate::agent::registry::LocalAgent;
use crate::mcp::ServerSpec;
use crate::error::{Error, Result};

/// The file registered agents are kept in, in the config dir.
pub const AGENTS_FILE: &str = "agents.toml";

/// One registered agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AgentEntry {
    #[serde(skip)]
    pub name: String,
    /// The program and its arguments, run without a shell.
    pub command: Vec<String>,
    /// Variables set from the keyring: variable → key name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Variables passed through from Reins' environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// Places the person lets the agent write besides its own state (it is confined to them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_write: Vec<std::path::PathBuf>,
}

/// A registered agent as the faces list it (a New run dialog offers these).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct AgentView {
    pub name: String,
    /// The command line, for people (it is run without a shell).
    pub command: String,
    /// The variables set from the keyring, by name (`VAR=key`).
    pub keys: Vec<String>,
}

impl From<AgentEntry> for AgentView {
    fn from(a: AgentEntry) -> Self {
        Self {
            command: shell_words::join(&a.command),
            keys: a.env.iter().map(|(v, k)| format!("{v}={k}")).collect(),
            name: a.name,
        }
    }
}

#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentsFile {
    #[serde(default)]
    agent: BTreeMap<String, AgentEntry>,
}

/// What a person asks an ACP run to do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AcpRunRequest {
    pub goal: String,
    pub name: Option<String>,
    /// A registered agent's name, or a command line (split like a shell splits words, never run
    /// through one).
    pub agent: String,
    /// More variables from the keyring (variable → key name), over the registered agent's.
    pub env: BTreeMap<String, String>,
    pub pass_env: Vec<String>,
    /// Places the agent may write besides its own state, over the registered agent's.
    pub may_write: Vec<std::path::PathBuf>,
    pub idle_timeout_s: Option<u64>,
}

fn check_name(name: &str) -> Result<()> {
    if crate::keys::is_plain_name(name) {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "agent name {name:?}: 1 to 64 letters, digits, '-', '_' or '.'"
        )))
    }
}

fn check_env(env: &BTreeMap<String, String>, pass: &[String]) -> Result<()> {
    for var in env.keys().chain(pass.iter()) {
        let ok = !var.is_empty()
            && !var.starts_with(|c: char| c.is_ascii_digit())
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(Error::Invalid(format!(
                "environment variable {var:?}: letters, digits and '_', not starting with a digit"
            )));
        }
    }
    for key in env.values() {
        crate::keys::check_name(key).map_err(Error::Invalid)?;
    }
    Ok(())
}

fn read(file: &Path) -> Result<AgentsFile> {
    match std::fs::read_to_string(file) {
        Ok(text) => toml::from_str(&text)
            .map_err(|e| Error::Invalid(format!("{} cannot be read: {e}", file.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(AgentsFile::default()),
        Err(source) => Err(Error::Io {
            context: format!("reading {}", file.display()),
            source,
        }),
    }
}

fn write(file: &Path, agents: &AgentsFile) -> Result<()> {
    let text = toml::to_string(agents)
        .map_err(|e| Error::Invalid(format!("the agents cannot be written: {e}")))?;
    Ok(crate::data_dir::write_config(file, &text)?)
}

fn agents_file() -> Result<PathBuf> {
    Ok(crate::data_dir::config_dir()?.join(AGENTS_FILE))
}

/// The registered agents, by name.
pub fn agents() -> Result<Vec<AgentEntry>> {
    Ok(read(&agents_file()?)?
        .agent
        .into_iter()
        .map(|(name, e)| AgentEntry { name, ..e })
        .collect())
}

fn places(named: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>> {
    crate::contain::reach::writable_places(named)
        .map_err(|e| Error::Invalid(format!("the agent {e}")))
}

/// Registers an agent under a new name.
pub fn add_agent(mut entry: AgentEntry) -> Result<()> {
    check_name(&entry.name)?;
    check_env(&entry.env, &entry.pass_env)?;
    entry.may_write = places(&entry.may_write)?;
    if entry.command.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(Error::Invalid(
            "the agent's command is empty: give it after `--`".into(),
        ));
    }
    let file = agents_file()?;
    let mut agents = read(&file)?;
    if agents.agent.contains_key(&entry.name) {
        return Err(Error::Conflict(format!(
            "an agent named {:?} is registered already; `reins agents remove {}` first",
            entry.name, entry.name
        )));
    }
    agents.agent.insert(entry.name.clone(), entry);
    write(&file, &agents)
}

/// The agents Reins knows how to start that are on this process's `PATH`, with whether one of
/// that name is registered already.
pub fn agents_on_path() -> Result<Vec<(FoundAgent, bool)>> {
    let registered: Vec<String> = agents()?.into_iter().map(|a| a.name).collect();
    let path = std::env::var_os("PATH").unwrap_or_default();
    Ok(crate::agent::acp::known::on_path(&path)
        .into_iter()
        .map(|f| {
            let taken = registered.contains(&f.name);
            (f, taken)
        })
        .collect())
}

/// Registers the agent `name` found on `PATH`, as found (never a command from the caller).
pub fn register_found_agent(name: &str) -> Result<FoundAgent> {
    let found = agents_on_path()?
        .into_iter()
        .map(|(f, _)| f)
        .find(|f| f.name == name)
        .ok_or_else(|| Error::Invalid(format!("no agent {name:?} Reins knows is on PATH")))?;
    add_agent(AgentEntry {
        name: found.name.clone(),
        command: found.command.clone(),
        env: BTreeMap::new(),
        pass_env: Vec::new(),
        may_write: Vec::new(),
    })?;
    Ok(found)
}

/// Unregisters an agent; false when none had the name.
pub fn remove_agent(name: &str) -> Result<bool> {
    let file = agents_file()?;
    let mut agents = read(&file)?;
    let removed = agents.agent.remove(name).is_some();
    if removed {
        write(&file, &agents)?;
    }
    Ok(removed)
}

/// The spec an ACP run is created with: a registered agent's, or the command line's.
pub fn acp_spec(req: AcpRunRequest) -> Result<Spec> {
    let (goal, name) = goal_and_name(&req.goal, req.name)?;
    let word = req.agent.trim();
    let registered = if word.chars().any(char::is_whitespace) {
        None
    } else {
        agents()?.into_iter().find(|a| a.name == word)
    };
    let (command, mut env, mut pass_env, mut may_write, agent) = match registered {
        Some(a) => (a.command, a.env, a.pass_env, a.may_write, Some(a.name)),
        None => {
            let words = shell_words::split(word).map_err(|e| {
                Error::Invalid(format!("the agent command {word:?} cannot be split: {e}"))
            })?;
            if words.is_empty() {
                return Err(Error::Invalid(
                    "no agent: give --agent a registered name or a command line".into(),
                ));
            }
            (words, BTreeMap::new(), Vec::new(), Vec::new(), None)
        }
    };
    env.extend(req.env);
    pass_env.extend(req.pass_env);
    check_env(&env, &pass_env)?;
    may_write.extend(req.may_write);
    let may_write = places(&may_write)?;
    Ok(Spec {
        name,
        goal,
        command,
        env,
        pass_env,
        may_write,
        agent,
        idle_timeout_s: req.idle_timeout_s.unwrap_or(DEFAULT_IDLE_TIMEOUT_S),
    })
}

/// This machine's registrations, read afresh each time a run from another machine starts.
pub struct Registered;

impl crate::agent::registry::Registry for Registered {
    fn agent(&self, name: &str) -> std::result::Result<Option<LocalAgent>, String> {
        Ok(agents()
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|a| a.name == name)
            .map(|a| LocalAgent {
                command: a.command,
                env: a.env,
                pass_env: a.pass_env,
                may_write: a.may_write,
            }))
    }

    fn mcp_server(&self, name: &str) -> std::result::Result<Option<ServerSpec>, String> {
        Ok(super::runs::mcp_servers()
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|s| s.name == name))
    }
}
