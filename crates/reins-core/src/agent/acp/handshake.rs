//! Starting an external agent: the process, `initialize`, then its session — loaded when the agent
//! can load the one this run had, else new — and the mode in which it asks before acting. A mode in
//! which the agent decides risk itself is never chosen; an agent that offers no other is refused.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    LoadSessionRequest, NewSessionRequest, SetSessionModeRequest,
};
use serde_json::Value;

use super::session::Process;
use super::{AcpAgent, AgentFacts, Live};

/// Modes in which the agent decides risk itself or does not ask: never selected.
const UNSAFE_MODES: &[&str] = &[
    "yolo", "auto", "auto-edit", "autoEdit", "acceptEdits", "bypassPermissions", "full-access",
    "agent-full-access",
];
/// Modes, by preference, in which the agent asks before every edit and command.
const ASKING_MODES: &[&str] = &["default", "ask", "manual", "read-only"];

impl AcpAgent {
    pub(super) async fn start(&mut self) -> Result<Live, String> {
        let mut env = Vec::new();
        for (var, key) in &self.spec.env {
            let secret = crate::keys::get_blocking(Arc::clone(&self.services.secrets), key)
                .await
                .map_err(|e| format!("the key {key:?} for {var}: {e}"))?
                .ok_or_else(|| {
                    format!("no key {key:?} for {var} in the keyring; `reins keys set {key}`")
                })?;
            env.push((var.clone(), secret));
        }
        let mut process =
            Process::start(&self.spec.command, &self.services.root, &env, &self.spec.pass_env)
                .await?;
        self.started = Some((process.pid, self.spec.command.join(" ")));
        let init = &process.init;
        let info = init.agent_info.as_ref();
        let mut facts = AgentFacts {
            name: info.map_or_else(|| self.spec.command[0].clone(), |i| i.name.clone()),
            version: info.map_or_else(String::new, |i| i.version.clone()),
            capabilities: serde_json::to_value(&init.agent_capabilities).unwrap_or(Value::Null),
            mode: None,
        };
        let can_load = init.agent_capabilities.load_session;
        let root = self.services.root.clone();
        let previous = self.state.session.clone();
        let session = match previous {
            Some(id) if can_load => {
                let loaded = process
                    .conn
                    .send_request(LoadSessionRequest::new(id.clone(), root.clone()))
                    .block_task()
                    .await;
                match loaded {
                    Ok(r) => (id, r.modes),
                    Err(e) => {
                        self.state
                            .tell
                            .push(format!("(your earlier session could not be loaded: {e})"));
                        self.new_session(&mut process).await?
                    }
                }
            }
            _ => self.new_session(&mut process).await?,
        };
        let (id, modes) = session;
        if let Some(modes) = modes {
            let current = modes.current_mode_id.0.to_string();
            let ids: Vec<String> = modes
                .available_modes
                .iter()
                .map(|m| m.id.0.to_string())
                .collect();
            let pick = ASKING_MODES
                .iter()
                .find(|m| ids.iter().any(|i| i == *m))
                .map(|m| (*m).to_owned());
            match pick {
                Some(m) if m != current => {
                    process
                        .conn
                        .send_request(SetSessionModeRequest::new(id.clone(), m.clone()))
                        .block_task()
                        .await
                        .map_err(|e| format!("the agent refused mode {m:?}: {e}"))?;
                    facts.mode = Some(m);
                }
                Some(m) => facts.mode = Some(m),
                None if UNSAFE_MODES.contains(&current.as_str()) => {
                    return Err(format!(
                        "the agent offers no mode in which it asks before acting (it is in {current:?}; it offers {ids:?}); Reins will not let an agent decide risk itself"
                    ))
                }
                None => facts.mode = Some(current),
            }
        }
        self.state.session = Some(id.clone());
        self.state.facts = Some(facts);
        Ok(Live {
            process,
            session: id,
            responder: std::sync::Mutex::new(None),
        })
    }

    async fn new_session(
        &mut self,
        process: &mut Process,
    ) -> Result<(String, Option<agent_client_protocol::v1::schema::SessionModeState>), String> {
        let r = process
            .conn
            .send_request(NewSessionRequest::new(self.services.root.clone()))
            .block_task()
            .await
            .map_err(|e| format!("the agent did not open a session: {e}"))?;
        // A new session knows nothing yet: the goal goes in its first prompt again.
        self.state.prompts = 0;
        self.state.in_turn = false;
        Ok((r.session_id.0.to_string(), r.modes))
    }
}
