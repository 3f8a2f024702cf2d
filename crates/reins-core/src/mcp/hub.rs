//! A run's MCP servers: started with the attempt that drives the run, in its workspace, ended with
//! it (and, after a crash, by the next attempt's orphan sweep, which finds their recorded process
//! groups). A server that died is started again for the next call to it, and must come back with
//! the tools it had.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::catalog::Catalog;
use super::connection::{Connection, CALL_TIMEOUT};
use super::server::ServerSpec;
use super::McpError;
use crate::keys::{Secret, SecretStore};
use crate::action::McpCall;

/// How a server's process is named in the run's process records (`MCP server NAME: COMMAND`).
pub const PROCESS_LABEL: &str = "MCP server ";

pub struct Hub {
    specs: Vec<ServerSpec>,
    root: PathBuf,
    secrets: Arc<dyn SecretStore>,
    /// Where each server's stderr log goes: `<prefix>-<server>.log`.
    log_prefix: Option<PathBuf>,
    conns: BTreeMap<String, Connection>,
    catalog: Catalog,
    /// Processes started since last asked: (pid, command), for the harness to record.
    started: Vec<(u32, String)>,
    contain: crate::contain::Setup,
}

impl Hub {
    /// Starts every server in `specs` for a run on `root` and lists their tools.
    pub async fn start(
        specs: &[ServerSpec],
        root: &Path,
        secrets: Arc<dyn SecretStore>,
        log_prefix: Option<PathBuf>,
        contain: crate::contain::Setup,
    ) -> Result<Self, McpError> {
        let mut hub = Self {
            contain,
            specs: specs.to_vec(),
            root: root.to_owned(),
            secrets,
            log_prefix,
            conns: BTreeMap::new(),
            catalog: Catalog::default(),
            started: Vec::new(),
        };
        for spec in specs {
            let conn = hub.connect(spec).await?;
            let tools = conn.tools().await?;
            hub.catalog.add(&spec.name, &conn.identity, tools);
            hub.conns.insert(spec.name.clone(), conn);
        }
        Ok(hub)
    }

    async fn connect(&mut self, spec: &ServerSpec) -> Result<Connection, McpError> {
        let mut keys: Vec<(String, Secret)> = Vec::new();
        for (var, key) in &spec.env {
            keys.push((var.clone(), self.key(spec, key).await?));
        }
        let bearer = match &spec.bearer_key {
            Some(key) => Some(self.key(spec, key).await?),
            None => None,
        };
        let log = self
            .log_prefix
            .as_ref()
            .map(|p| PathBuf::from(format!("{}-{}.log", p.display(), spec.name)));
        let conn = Connection::start(spec, &self.root, &keys, bearer.as_ref(), log, &self.contain)
            .await?;
        if let Some(pid) = conn.pid() {
            self.started
                .push((pid, format!("{PROCESS_LABEL}{}: {}", spec.name, spec.display())));
        }
        Ok(conn)
    }

    async fn key(&self, spec: &ServerSpec, key: &str) -> Result<Secret, McpError> {
        let store = Arc::clone(&self.secrets);
        match crate::keys::get_blocking(store, key).await {
            Ok(Some(secret)) => Ok(secret),
            Ok(None) => Err(McpError::Start {
                server: spec.name.clone(),
                detail: format!("the keyring has no entry {key:?} (`reins keys set {key}`)"),
            }),
            Err(e) => Err(McpError::Start {
                server: spec.name.clone(),
                detail: format!("the keyring entry {key:?} cannot be read: {e}"),
            }),
        }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Each server's name and how it named itself.
    pub fn labels(&self) -> Vec<(String, String)> {
        self.conns
            .values()
            .map(|c| (c.name.clone(), c.label.clone()))
            .collect()
    }

    /// How each server Reins started runs, in words: (server, "confined (…): …").
    pub fn confinements(&self) -> Vec<(String, String)> {
        self.conns
            .values()
            .filter_map(|c| Some((c.name.clone(), c.confinement(&self.root)?)))
            .collect()
    }

    /// The processes started since last asked.
    pub fn take_started(&mut self) -> Vec<(u32, String)> {
        std::mem::take(&mut self.started)
    }

    /// Runs one call: the result's text for the model, or what went wrong. A server that died
    /// is started again first; one that came back with other tools, or as another server, is not
    /// called.
    pub async fn call(&mut self, call: &McpCall) -> Result<String, String> {
        let alive = self
            .conns
            .get_mut(&call.server)
            .is_some_and(Connection::alive);
        if !alive {
            self.restart(&call.server).await?;
        }
        let timeout = self
            .specs
            .iter()
            .find(|s| s.name == call.server)
            .and_then(|s| s.timeout_s)
            .map_or(CALL_TIMEOUT, Duration::from_secs);
        let conn = self
            .conns
            .get_mut(&call.server)
            .ok_or_else(|| format!("this run has no MCP server `{}`", call.server))?;
        if conn.identity != call.identity {
            return Err(format!(
                "the MCP server `{}` is not the one this call was made for (it was started again as another server); not calling it",
                call.server
            ));
        }
        conn.call(&call.tool, &call.arguments, timeout).await
    }

    async fn restart(&mut self, server: &str) -> Result<(), String> {
        let spec = self
            .specs
            .iter()
            .find(|s| s.name == server)
            .cloned()
            .ok_or_else(|| format!("this run has no MCP server `{server}`"))?;
        let gone = self
            .conns
            .remove(server)
            .map(|c| c.stderr_tail(1500))
            .unwrap_or_default();
        let conn = self.connect(&spec).await.map_err(|e| {
            let tail = if gone.trim().is_empty() {
                String::new()
            } else {
                format!("; before it ended it wrote:\n{}", gone.trim())
            };
            format!("the MCP server `{server}` had ended and could not be started again: {e}{tail}")
        })?;
        let tools = conn.tools().await.map_err(|e| e.to_string())?;
        let mut fresh = Catalog::default();
        fresh.add(server, &conn.identity, tools);
        let before = self.catalog.digests().into_iter().find(|(s, _)| s == server);
        let after = fresh.digests().into_iter().find(|(s, _)| s == server);
        if before != after {
            return Err(format!(
                "the MCP server `{server}` was started again and now offers other tools; this run cannot use it until a person resumes it"
            ));
        }
        self.conns.insert(server.to_owned(), conn);
        Ok(())
    }
}
