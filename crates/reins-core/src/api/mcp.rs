//! MCP servers a person registered by name (`mcp.toml` in the config dir), and what they offer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::Reins;
use crate::action::mcp::Hints;
use crate::error::{Error, Result};
use crate::mcp::{Hub, ServerSpec, SERVERS_FILE};

/// A registered MCP server as the faces list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpServerView {
    pub name: String,
    /// `stdio` (a program Reins starts) or `http`.
    pub transport: String,
    /// The command line (run without a shell) or the address.
    pub command: String,
    /// The keyring entries it is given, by name (`VAR=key`, or `bearer=key`).
    pub keys: Vec<String>,
}

impl From<&ServerSpec> for McpServerView {
    fn from(s: &ServerSpec) -> Self {
        let mut keys: Vec<String> = s.env.iter().map(|(v, k)| format!("{v}={k}")).collect();
        if let Some(k) = &s.bearer_key {
            keys.push(format!("bearer={k}"));
        }
        Self {
            name: s.name.clone(),
            transport: if s.url.is_some() { "http" } else { "stdio" }.into(),
            command: s.display(),
            keys,
        }
    }
}

/// One tool of a server, as `reins mcp tools` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpToolView {
    pub name: String,
    /// The function name the model is offered it under.
    pub function: String,
    pub description: String,
    /// The server's claims about it.
    pub hints: Hints,
    pub input_schema: serde_json::Value,
}

/// What a server said it is and offers.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct McpToolsView {
    pub server: String,
    /// How it named itself ("secure-filesystem-server 0.2.0").
    pub label: String,
    pub tools: Vec<McpToolView>,
}

impl Reins {
    /// Serves the profile memory over MCP on stdin/stdout until the client goes away; `run` (and
    /// its agent) are named in what is audited and in the provenance of suggested facts.
    pub async fn serve_memory_mcp(&self, run: Option<crate::ids::RunId>) -> Result<()> {
        if let Some(id) = run {
            crate::store::runs::get(self.store().pool(), id).await?;
        }
        crate::mcp::serve::MemoryServer::new(
            self.store().clone(),
            crate::mcp::serve::Caller { run },
        )
        .serve_stdio()
        .await
        .map_err(|e| Error::Io {
            context: "reins mcp serve".into(),
            source: std::io::Error::other(e),
        })
    }

    fn mcp_file(&self) -> Result<PathBuf> {
        Ok(crate::data_dir::config_dir()?.join(SERVERS_FILE))
    }

    /// The registered MCP servers, by name.
    pub fn mcp_servers(&self) -> Result<Vec<ServerSpec>> {
        Ok(crate::mcp::server::registered(&self.mcp_file()?)?)
    }

    /// Registers an MCP server under a new name. Its keys need not exist yet (a run checks).
    pub fn add_mcp_server(&self, spec: ServerSpec) -> Result<()> {
        Ok(crate::mcp::server::register(&self.mcp_file()?, spec)?)
    }

    /// Unregisters an MCP server; false when none had the name. Runs keep what they started with.
    pub fn remove_mcp_server(&self, name: &str) -> Result<bool> {
        Ok(crate::mcp::server::unregister(&self.mcp_file()?, name)?)
    }

    /// The registered servers named, in order, once each; an unknown name is an error naming them.
    pub(crate) fn mcp_specs(&self, names: &[String]) -> Result<Vec<ServerSpec>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let all = self.mcp_servers()?;
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

    /// Starts a registered server as a run on `workspace` would, and lists its tools.
    pub async fn mcp_tools(&self, name: &str, workspace: &Path) -> Result<McpToolsView> {
        let spec = self.mcp_specs(&[name.to_owned()])?;
        let root = std::fs::canonicalize(workspace)
            .map_err(|e| Error::Invalid(format!("workspace {}: {e}", workspace.display())))?;
        let hub = Hub::start(&spec, &root, Arc::clone(self.engine.secrets()), None).await?;
        let label = hub
            .labels()
            .into_iter()
            .next()
            .map(|(_, l)| l)
            .unwrap_or_default();
        let tools = hub
            .catalog()
            .tools
            .iter()
            .map(|t| McpToolView {
                name: t.tool.clone(),
                function: t.function.clone(),
                description: t.description.clone(),
                hints: t.hints.clone(),
                input_schema: t.input_schema.clone(),
            })
            .collect();
        Ok(McpToolsView {
            server: name.to_owned(),
            label,
            tools,
        })
    }
}
