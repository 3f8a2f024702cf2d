//! MCP servers a person registered by name (`mcp.toml` in the config dir), and what they offer.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::Reins;
use crate::action::mcp::Hints;
use crate::error::{Error, Result};
use crate::mcp::{Hub, ServerSpec};

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
    /// How its process runs: "confined (Landlock ABI 7, seccomp): …"; none for an HTTP server.
    pub confinement: Option<String>,
}

/// `reins mcp relay`: carries stdin and stdout to the memory link of the Reins that started this
/// (confined) agent. Opens no store, so it runs where the data dir is out of reach.
pub async fn relay_memory(port: u16) -> Result<()> {
    crate::mcp::link::relay(port).await.map_err(Error::Invalid)
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

    /// Starts a registered server as a run on `workspace` would, and lists its tools.
    pub async fn mcp_tools(&self, name: &str, workspace: &Path) -> Result<McpToolsView> {
        let spec = crate::settings::runs::mcp_specs(&[name.to_owned()])?;
        let root = std::fs::canonicalize(workspace)
            .map_err(|e| Error::Invalid(format!("workspace {}: {e}", workspace.display())))?;
        let hub = Hub::start(
            &spec,
            &root,
            Arc::clone(self.engine.secrets()),
            None,
            self.engine.containment().clone(),
        )
        .await?;
        let confinement = hub.confinements().into_iter().next().map(|(_, c)| c);
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
            confinement,
        })
    }
}
