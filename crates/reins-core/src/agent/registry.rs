//! What this machine registered itself: the only programs a worker starts for a run that was
//! queued on another machine. A shared database says which agent a run wants, by name; it never
//! says which program runs here, with which keys, or where it may write. A run whose agent or MCP
//! servers this machine has not registered under the same names is not started here.

use super::{acp, claude, llm, script, AgentError};

/// An external agent as this machine registered it (`agents.toml`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalAgent {
    pub command: Vec<String>,
    pub env: std::collections::BTreeMap<String, String>,
    pub pass_env: Vec<String>,
    pub may_write: Vec<std::path::PathBuf>,
}

/// This machine's own registrations, read when a run from elsewhere is started.
pub trait Registry: Send + Sync {
    /// The ACP agent registered here as `name`.
    fn agent(&self, name: &str) -> Result<Option<LocalAgent>, String>;
    /// The MCP server registered here as `name`.
    fn mcp_server(&self, name: &str) -> Result<Option<crate::mcp::ServerSpec>, String>;
}

/// A machine that registered nothing.
pub struct Nothing;

impl Registry for Nothing {
    fn agent(&self, _: &str) -> Result<Option<LocalAgent>, String> {
        Ok(None)
    }
    fn mcp_server(&self, _: &str) -> Result<Option<crate::mcp::ServerSpec>, String> {
        Ok(None)
    }
}

fn refused(detail: String) -> AgentError {
    AgentError::Invalid(detail)
}

fn plan(detail: serde_json::Error) -> AgentError {
    AgentError::Plan {
        origin: "(stored spec)".into(),
        detail: detail.to_string(),
    }
}

/// The spec a run of `kind` queued on another machine is started with here: every program it
/// names replaced by this machine's registration of the same name (with this machine's keys and
/// places), or an error saying what this machine would have to register. Plans of the script agent
/// start no program of their own and are returned as they are.
pub fn localize(kind: &str, spec: &str, here: &dyn Registry) -> Result<String, AgentError> {
    match kind {
        script::KIND => Ok(spec.to_owned()),
        acp::KIND => {
            let mut s = acp::Spec::from_json(spec)?;
            let shown = shell_words::join(&s.command);
            let Some(name) = s.agent.clone() else {
                return Err(refused(format!(
                    "it names its agent only by a command line (`{shown}`), and a worker starts only the agents its own machine registered: register one here (`reins agents add NAME -- COMMAND`) and queue the run with `--agent NAME`"
                )));
            };
            let Some(local) = here.agent(&name).map_err(refused)? else {
                return Err(refused(format!(
                    "its agent {name:?} is not registered on this machine: `reins agents add {name} -- COMMAND` here lets this worker start it"
                )));
            };
            s.command = local.command;
            s.env = local.env;
            s.pass_env = local.pass_env;
            s.may_write = local.may_write;
            serde_json::to_string(&s).map_err(plan)
        }
        claude::KIND => {
            let mut s = claude::Spec::from_json(spec)?;
            if let Some(h) = s.headless.as_mut() {
                let path = std::env::var_os("PATH");
                let Some(program) = crate::process::find_program("claude", path.as_deref()) else {
                    return Err(refused(
                        "it runs Claude Code, which is not on this machine's PATH".into(),
                    ));
                };
                h.program = program.to_string_lossy().into_owned();
                // Keys, variables and places were named on the other machine: none of them here.
                h.env.clear();
                h.pass_env.clear();
                h.may_write.clear();
            }
            serde_json::to_string(&s).map_err(plan)
        }
        llm::KIND => {
            let mut s = llm::Spec::from_json(spec)?;
            if let Some(key) = &s.settings.key {
                return Err(refused(format!(
                    "it would send this machine's key {key:?} to {}, a model server chosen on another machine",
                    s.settings.base_url
                )));
            }
            for server in &mut s.mcp {
                let Some(local) = here.mcp_server(&server.name).map_err(refused)? else {
                    return Err(refused(format!(
                        "its MCP server {:?} is not registered on this machine: `reins mcp add {} …` here lets this worker start it",
                        server.name, server.name
                    )));
                };
                *server = local;
            }
            serde_json::to_string(&s).map_err(plan)
        }
        other => Err(AgentError::UnknownKind(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Here;

    impl Registry for Here {
        fn agent(&self, name: &str) -> Result<Option<LocalAgent>, String> {
            Ok((name == "qwen").then(|| LocalAgent {
                command: vec!["/opt/qwen/bin/qwen".into(), "--acp".into()],
                ..LocalAgent::default()
            }))
        }
        fn mcp_server(&self, _: &str) -> Result<Option<crate::mcp::ServerSpec>, String> {
            Ok(None)
        }
    }

    fn acp_spec(agent: Option<&str>) -> String {
        serde_json::json!({
            "name": "tidy", "goal": "tidy", "agent": agent,
            "command": ["sh", "-c", "id > /tmp/proof"],
            "env": {"OPENAI_API_KEY": "openai"}, "passEnv": ["AWS_SECRET_ACCESS_KEY"],
            "mayWrite": ["/"], "idleTimeoutS": 60
        })
        .to_string()
    }

    #[test]
    fn a_queued_acp_run_starts_this_machines_registration_never_the_databases_command() {
        let err = localize(acp::KIND, &acp_spec(None), &Here).unwrap_err().to_string();
        assert!(err.contains("only by a command line (`sh -c 'id > /tmp/proof'`)"), "{err}");
        let err = localize(acp::KIND, &acp_spec(Some("evil")), &Here).unwrap_err().to_string();
        assert!(err.contains("\"evil\" is not registered on this machine"), "{err}");
        let here = localize(acp::KIND, &acp_spec(Some("qwen")), &Here).unwrap();
        let here = acp::Spec::from_json(&here).unwrap();
        assert_eq!(here.command, ["/opt/qwen/bin/qwen", "--acp"]);
        assert!(here.env.is_empty() && here.pass_env.is_empty() && here.may_write.is_empty());
        assert_eq!(here.goal, "tidy");
    }

    #[test]
    fn a_queued_llm_run_gets_no_key_of_this_machine_and_no_server_it_did_not_register() {
        let mut spec = llm::Spec {
            name: "n".into(),
            goal: "g".into(),
            settings: crate::provider::Settings::default(),
            max_turns: 3,
            mcp: Vec::new(),
        };
        spec.settings.key = Some("anthropic".into());
        let err = localize(llm::KIND, &spec.to_json(), &Here).unwrap_err().to_string();
        assert!(err.contains("this machine's key \"anthropic\""), "{err}");
        spec.settings.key = None;
        assert!(localize(llm::KIND, &spec.to_json(), &Here).is_ok());
        spec.mcp.push(
            serde_json::from_value(serde_json::json!({"name": "files", "command": ["sh", "-c", "id"]}))
                .unwrap(),
        );
        let err = localize(llm::KIND, &spec.to_json(), &Here).unwrap_err().to_string();
        assert!(err.contains("MCP server \"files\" is not registered"), "{err}");
    }
}
