//! Starting an external agent: the process, `initialize`, then its session — loaded when the agent
//! can load the one this run had, else new — and the mode in which it asks before acting. A mode in
//! which the agent decides risk itself is never chosen; an agent that offers no other is refused.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, LoadSessionRequest, NewSessionRequest, SessionConfigOption, SessionModeState,
    SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use serde_json::Value;

use super::session::Process;
use super::{AcpAgent, Live};
use crate::agent::Account;
use crate::compat::ExternalAgent;

/// Modes in which the agent decides risk itself or does not ask: never selected.
pub(super) const UNSAFE_MODES: &[&str] = &[
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
        let held = self.confine().await?;
        let mut set: Vec<(&str, String)> = super::vendors::asking_env(&self.spec.command)
            .iter()
            .map(|(var, value)| (*var, (*value).to_owned()))
            .collect();
        for (var, name, content) in super::vendors::asking_files(&self.spec.command) {
            // Without confinement the agent could rewrite the file as it likes: none is given.
            if let Some(confined) = &held.confined {
                let file = confined.own_file(name);
                std::fs::write(&file, content)
                    .map_err(|e| format!("cannot write the agent's settings {}: {e}", file.display()))?;
                set.push((var, file.display().to_string()));
            }
        }
        let set: Vec<(&str, &str)> = set.iter().map(|(v, s)| (*v, s.as_str())).collect();
        let mut process = Process::start(
            &self.spec.command,
            &self.services.root,
            &env,
            &self.spec.pass_env,
            &set,
            self.services.log.clone(),
            held,
        )
        .await?;
        self.started = Some((process.pid(), self.spec.command.join(" ")));
        let init = &process.init;
        let info = init.agent_info.as_ref();
        let mut facts = ExternalAgent {
            name: info.map_or_else(|| self.spec.command[0].clone(), |i| i.name.clone()),
            version: info.map_or_else(String::new, |i| i.version.clone()),
            capabilities: capabilities(
                &serde_json::to_value(&init.agent_capabilities).unwrap_or(Value::Null),
            ),
            mode: None,
            confinement: Some(process.held().said(&self.services.root)),
            profile_sha256: process
                .held()
                .confined
                .as_ref()
                .map(|c| c.profile.hash().to_string()),
        };
        let can_load = init.agent_capabilities.load_session;
        let root = self.services.root.clone();
        let previous = self.state.session.clone();
        let session = match previous {
            Some(id) if can_load => {
                let loaded = process
                    .conn
                    .send_request(
                        LoadSessionRequest::new(id.clone(), root.clone())
                            .mcp_servers(self.mcp_servers(&process)),
                    )
                    .block_task()
                    .await;
                match loaded {
                    Ok(r) => {
                        process.forget_replay();
                        Opened {
                            id,
                            modes: r.modes,
                            config: r.config_options,
                        }
                    }
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
        facts.mode = choose_mode(&process, &session).await?;
        let id = session.id;
        self.state.session = Some(id.clone());
        self.accounts.push(Account::Identified(facts));
        Ok(Live {
            process,
            session: id,
            responder: std::sync::Mutex::new(None),
        })
    }

    /// The MCP servers the agent's session gets: Reins' memory server, bound to this run.
    fn mcp_servers(&self, process: &Process) -> Vec<agent_client_protocol::v1::schema::McpServer> {
        let link = process.held().link.as_ref();
        self.services
            .reins
            .iter()
            .map(|m| m.for_run(self.services.run, link))
            .collect()
    }

    async fn new_session(&mut self, process: &mut Process) -> Result<Opened, String> {
        let root = self.services.root.clone();
        let servers = self.mcp_servers(process);
        let open = |p: &Process| {
            p.conn
                .send_request(NewSessionRequest::new(root.clone()).mcp_servers(servers.clone()))
                .block_task()
        };
        let r = match open(process).await {
            Ok(r) => Ok(r),
            // Signed in with a key from the keyring, then asked again.
            Err(e) if e.code == agent_client_protocol::ErrorCode::AUTH_REQUIRED => {
                self.authenticate(process).await?;
                open(process).await
            }
            Err(e) => Err(e),
        }
        .map_err(|e| format!("the agent did not open a session: {e}"))?;
        // A new session knows nothing yet: the goal goes in its first prompt again.
        self.state.prompts = 0;
        self.state.in_turn = false;
        Ok(Opened {
            id: r.session_id.0.to_string(),
            modes: r.modes,
            config: r.config_options,
        })
    }
}

impl AcpAgent {
    /// Signs in with the method that names a variable Reins sets from the keyring
    /// (`--env OPENAI_API_KEY=KEY`): codex-acp's "Use OPENAI_API_KEY", for example. The key
    /// reaches the agent only through its environment.
    async fn authenticate(&self, process: &Process) -> Result<(), String> {
        let methods: Vec<(String, String)> = process
            .init
            .auth_methods
            .iter()
            .filter_map(|m| {
                let v = serde_json::to_value(m).ok()?;
                let id = v.get("id")?.as_str()?.to_owned();
                let text = ["id", "name", "description"]
                    .iter()
                    .filter_map(|k| v.get(*k).and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                Some((id, text))
            })
            .collect();
        let Some((id, _)) = auth_method(&methods, self.spec.env.keys()) else {
            let offered: Vec<&str> = methods.iter().map(|(id, _)| id.as_str()).collect();
            return Err(format!(
                "the agent needs to be signed in (it answered \"Authentication required\"); it offers {offered:?}. Reins signs in with a key from the OS keyring: store it with `reins keys set NAME`, then give it to the agent as the variable its method names, e.g. `--env OPENAI_API_KEY=NAME` (on `reins run` or `reins agents add`)"
            ));
        };
        process
            .conn
            .send_request(AuthenticateRequest::new(id.clone()))
            .block_task()
            .await
            .map(|_| ())
            .map_err(|e| format!("the agent refused to sign in with {id:?}: {e}"))
    }
}

/// The first method (id, its words) that names one of the variables Reins sets, as a word.
fn auth_method<'m, 'v>(
    methods: &'m [(String, String)],
    vars: impl Iterator<Item = &'v String> + Clone,
) -> Option<&'m (String, String)> {
    methods.iter().find(|(_, text)| {
        vars.clone().any(|var| {
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|word| word == var)
        })
    })
}

/// A session as opened: its id, and the modes or config options it offers.
struct Opened {
    id: String,
    modes: Option<SessionModeState>,
    config: Option<Vec<SessionConfigOption>>,
}

/// How the agent offers its modes: as ACP modes, or as a config option of category `mode`
/// (opencode).
enum Offer {
    Modes,
    Config(String),
}

/// Puts the agent in a mode in which it asks before acting, if it has modes; returns the mode.
async fn choose_mode(process: &Process, session: &Opened) -> Result<Option<String>, String> {
    let (offer, current, ids) = if let Some(modes) = &session.modes {
        let ids = modes.available_modes.iter().map(|m| m.id.0.to_string()).collect();
        (Offer::Modes, modes.current_mode_id.0.to_string(), ids)
    } else if let Some((config, current, ids)) = mode_option(session.config.as_deref()) {
        (Offer::Config(config), current, ids)
    } else {
        return Ok(None);
    };
    let pick = ASKING_MODES
        .iter()
        .find(|m| ids.iter().any(|i| i == *m))
        .map(|m| (*m).to_owned());
    let m = match pick {
        Some(m) => m,
        None if UNSAFE_MODES.contains(&current.as_str()) => {
            return Err(format!(
                "the agent offers no mode in which it asks before acting (it is in {current:?}; it offers {ids:?}); Reins will not let an agent decide risk itself"
            ))
        }
        None => return Ok(Some(current)),
    };
    if m != current {
        let id = session.id.clone();
        let sent = match &offer {
            Offer::Modes => process
                .conn
                .send_request(SetSessionModeRequest::new(id, m.clone()))
                .block_task()
                .await
                .map(|_| ()),
            Offer::Config(config) => process
                .conn
                .send_request(SetSessionConfigOptionRequest::new(
                    id,
                    config.clone(),
                    m.as_str(),
                ))
                .block_task()
                .await
                .map(|_| ()),
        };
        sent.map_err(|e| format!("the agent refused mode {m:?}: {e}"))?;
    }
    Ok(Some(m))
}

/// The config option of category `mode`: its id, current value and values.
fn mode_option(config: Option<&[SessionConfigOption]>) -> Option<(String, String, Vec<String>)> {
    config?.iter().find_map(|o| {
        let v = serde_json::to_value(o).ok()?;
        (v.get("category").and_then(Value::as_str) == Some("mode")).then_some(())?;
        let current = v.get("currentValue").and_then(Value::as_str)?.to_owned();
        let ids = v
            .get("options")
            .and_then(Value::as_array)?
            .iter()
            .filter_map(|o| o.get("value").and_then(Value::as_str).map(str::to_owned))
            .collect();
        Some((o.id.0.to_string(), current, ids))
    })
}

/// An agent's capabilities as dotted names: `loadSession`, `promptCapabilities.image`, and
/// `sessionCapabilities.fork` for an empty object (offered, no options).
pub(super) fn capabilities(v: &Value) -> Vec<String> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Bool(true) => out.push(prefix.to_owned()),
            Value::Object(o) if o.is_empty() && !prefix.is_empty() => out.push(prefix.to_owned()),
            Value::Object(o) => {
                for (k, v) in o {
                    if k.starts_with('_') {
                        continue;
                    }
                    let name = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&name, v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_sign_in_method_is_the_one_naming_a_variable_reins_sets() {
        let methods: Vec<(String, String)> = [
            ("chatgpt", "chatgpt Login with ChatGPT"),
            ("codex-api-key", "codex-api-key Use CODEX_API_KEY Requires setting the `CODEX_API_KEY` environment variable."),
            ("openai-api-key", "openai-api-key Use OPENAI_API_KEY Requires setting the `OPENAI_API_KEY` environment variable."),
        ]
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
        let vars = ["OPENAI_API_KEY".to_owned()];
        let chosen = super::auth_method(&methods, vars.iter()).map(|(id, _)| id.as_str());
        assert_eq!(chosen, Some("openai-api-key"));
        let none = ["OPENAI_API".to_owned()];
        assert_eq!(super::auth_method(&methods, none.iter()), None, "a whole word only");
        assert_eq!(super::auth_method(&methods, [].iter()), None, "no key, no sign-in");
    }

    #[test]
    fn capabilities_read_as_dotted_names() {
        let caps = super::capabilities(&json!({
            "loadSession": true,
            "mcpCapabilities": {"http": true, "sse": false},
            "sessionCapabilities": {"fork": {}},
            "_meta": {"x": true}
        }));
        assert_eq!(caps, ["loadSession", "mcpCapabilities.http", "sessionCapabilities.fork"]);
    }
}
