//! A run's MCP servers in the drive: started before the agent's first move of each attempt (their
//! process groups recorded, so a later attempt ends them after a crash), checked against the tools
//! the run started with, and the one way an `mcp.call` reaches a server — after its intent is
//! durable, like every effect.

use std::collections::BTreeMap;

use crate::event::{self as ev, Actor};
use crate::error::Result;
use crate::mcp::{Hub, McpError};
use crate::store::write::Write;
use crate::store::{audit, runs};
use crate::action::{mcp, McpCall, ToolCall};

use super::commit::Change;
use super::drive::Drive;
use super::DriveOutcome;

impl Drive<'_> {
    /// Starts the servers the agent's tools come from and offers it their tools. `Some` when the
    /// run cannot go on: a server that does not start, or whose tools changed since the run began.
    pub(super) async fn start_mcp(&mut self) -> Result<Option<DriveOutcome>> {
        let specs = self
            .agent
            .tools()
            .map(|t| t.mcp_servers())
            .unwrap_or_default();
        if specs.is_empty() {
            return Ok(None);
        }
        let prefix = self
            .e
            .agent_log(self.run)
            .map(|p| p.with_extension("mcp"));
        let started = Hub::start(
            &specs,
            self.ws.root(),
            std::sync::Arc::clone(&self.e.secrets),
            prefix,
            self.e.contain.clone(),
        )
        .await;
        let mut hub = match started {
            Ok(hub) => hub,
            // It may come up next time: retried under the run's budget, then left to a person.
            Err(e @ (McpError::Unavailable { .. } | McpError::Server { .. })) => {
                return self.retry_later(&e.into()).await.map(Some)
            }
            Err(e) => {
                return self
                    .suspend(&format!(
                        "{e}. Fix the server (`reins mcp tools NAME` tries it) and `reins resume {}`",
                        self.run
                    ))
                    .await
                    .map(Some)
            }
        };
        self.track_mcp(&mut hub).await;
        let digests: BTreeMap<String, String> = hub.catalog().digests().into_iter().collect();
        let mut compat = runs::get(self.e.store.pool(), self.run).await?.compat;
        match &compat.mcp_tools {
            Some(stored) if stored != &digests => {
                let changed: Vec<&str> = specs
                    .iter()
                    .map(|s| s.name.as_str())
                    .filter(|n| stored.get(*n) != digests.get(*n))
                    .collect();
                return self
                    .suspend(&format!(
                        "incompatible: the tools of the MCP server{} {} changed since the run started (a tool, its description, its arguments or its hints). `reins mcp tools NAME` shows them now; `reins resume {} --force` goes on with them",
                        if changed.len() == 1 { "" } else { "s" },
                        changed
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        self.run
                    ))
                    .await
                    .map(Some);
            }
            Some(_) => {}
            None => {
                compat.mcp_tools = Some(digests);
                let servers = hub
                    .labels()
                    .into_iter()
                    .map(|(name, label)| format!("{name} ({label})"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let change = Change::rows(vec![Write::RunCompat(Box::new(compat))]).event(
                    audit::Event::new(
                        Actor::Harness,
                        Some(self.run),
                        ev::Reason {
                            reason: format!(
                                "MCP servers started: {servers}; {} tools offered, recorded in the run's compatibility record",
                                hub.catalog().tools.len()
                            ),
                        },
                    ),
                );
                self.commit(change).await?;
            }
        }
        if let Some(t) = self.agent.tools() {
            t.offer_tools(hub.catalog());
        }
        self.served.mcp = Some(hub);
        Ok(None)
    }

    /// Records the servers' processes, so a later attempt ends them if this one is lost.
    async fn track_mcp(&mut self, hub: &mut Hub) {
        for (pid, command) in hub.take_started() {
            if let Err(e) = self
                .e
                .track_pid(self.run, self.cp.next_step, pid, &command)
                .await
            {
                tracing::warn!("could not record the MCP server's process {pid}: {e}");
            }
        }
    }

    /// The harness' part of a proposed MCP call: what the run's server says of the tool replaces
    /// whatever the proposal said (a plan cannot claim a tool is harmless). A call naming no tool
    /// of the run loses its identity and is refused as invalid.
    pub(super) fn complete_mcp(&self, mut call: ToolCall) -> ToolCall {
        if call.tool != mcp::TOOL {
            return call;
        }
        let Some(args) = call.args.as_object_mut() else {
            return call;
        };
        for key in ["identity", "description", "hints"] {
            args.remove(key);
        }
        let (server, tool) = (
            args.get("server").and_then(|v| v.as_str()).unwrap_or(""),
            args.get("tool").and_then(|v| v.as_str()).unwrap_or(""),
        );
        let offered = self
            .served
            .mcp
            .as_ref()
            .and_then(|h| h.catalog().find(server, tool))
            .cloned();
        if let Some(t) = offered {
            args.insert("identity".into(), t.identity.into());
            args.insert("description".into(), t.description.into());
            args.insert(
                "hints".into(),
                serde_json::to_value(&t.hints).unwrap_or_default(),
            );
        }
        call
    }

    /// Step 8 for an MCP call: the server's answer, or why there is none.
    pub(super) async fn call_mcp(&mut self, call: &McpCall) -> std::result::Result<String, String> {
        let Some(mut hub) = self.served.mcp.take() else {
            return Err(format!(
                "this run has no MCP server `{}` running",
                call.server
            ));
        };
        let outcome = hub.call(call).await;
        self.track_mcp(&mut hub).await;
        self.served.mcp = Some(hub);
        outcome
    }
}
