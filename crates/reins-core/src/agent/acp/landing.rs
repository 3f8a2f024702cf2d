//! A message from the agent as it lands, decoded as the connection decodes it and handled as the
//! run handles it: for the fuzz target and the tests, which feed Reins what an agent could send
//! without a process behind it.

use agent_client_protocol::v1::schema::{AgentRequest, SessionNotification};
use agent_client_protocol::JsonRpcMessage as _;
use serde_json::Value;

use super::requests::Handled;
use super::{AcpAgent, Services, Spec};
use crate::agent::Sessions;
use crate::agent::Move;

/// What Reins made of one message.
#[derive(Debug)]
pub enum Landed {
    /// Not a message Reins reads (not JSON-RPC, a response, a method it does not know, params
    /// that do not decode): the connection answers or drops it.
    Dropped,
    Request(Handled),
    /// A session update, and the move it forces (the agent acted unasked: the run stops).
    Update(Option<Move>),
}

impl AcpAgent {
    /// An agent for `root` with no process: messages are fed to [`Self::land`].
    pub fn detached(root: &std::path::Path) -> Self {
        let spec = Spec {
            name: "fuzz".into(),
            goal: "fuzz".into(),
            command: vec!["agent".into()],
            env: Default::default(),
            pass_env: Vec::new(),
            may_write: Vec::new(),
            agent: None,
            idle_timeout_s: super::DEFAULT_IDLE_TIMEOUT_S,
        };
        let services = Services {
            run: crate::ids::RunId::new(),
            root: root.to_path_buf(),
            secrets: std::sync::Arc::new(crate::keys::MemoryStore::default()),
            sessions: std::sync::Arc::new(Sessions::new()),
            log: None,
            reins: None,
            contain: crate::contain::Setup::default(),
            store: None,
        };
        Self::new(spec, services)
    }

    /// One JSON-RPC message from the agent.
    pub fn land(&mut self, message: &Value) -> Landed {
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return Landed::Dropped;
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        if message.get("id").is_some() {
            if !AgentRequest::matches_method(method) {
                // Answered "method not found" by the connection, as `on_request` would.
                return Landed::Dropped;
            }
            return match AgentRequest::parse_message(method, &params) {
                Ok(request) => Landed::Request(self.on_request(request)),
                Err(_) => Landed::Dropped,
            };
        }
        if method != "session/update" {
            return Landed::Dropped;
        }
        match serde_json::from_value::<SessionNotification>(params) {
            Ok(n) => Landed::Update(self.on_update(&n, &crate::progress::Silent)),
            Err(_) => Landed::Dropped,
        }
    }

    /// Tells the agent a step's outcome, as the harness does once a move is decided.
    pub fn decided(&mut self, observation: &crate::agent::Observation) {
        self.answer(observation);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::External as _;

    fn chunk(text: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})
    }

    fn write(id: u32, path: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "fs/write_text_file",
            "params": {"sessionId": "s", "path": path, "content": "x\n"}})
    }

    fn why(landed: Landed) -> Option<String> {
        match landed {
            Landed::Request(Handled::Decide(Move::Call { why, .. })) => why,
            other => panic!("not a call: {other:?}"),
        }
    }

    #[test]
    fn a_request_carries_what_the_agent_said_before_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut agent = AcpAgent::detached(dir.path());
        assert!(matches!(agent.land(&chunk("I will write the notes.")), Landed::Update(None)));
        assert_eq!(why(agent.land(&write(1, "NOTES.md"))).as_deref(), Some("I will write the notes."));
        assert_eq!(why(agent.land(&write(2, "OTHER.md"))), None, "not given twice");
        agent.land(&chunk("Now the other one."));
        assert_eq!(why(agent.land(&write(3, "OTHER.md"))).as_deref(), Some("Now the other one."));
    }

    fn messages(agent: &mut AcpAgent) -> Vec<String> {
        agent
            .take_accounts()
            .into_iter()
            .filter_map(|a| match a {
                crate::agent::Account::Update { what, detail } if what == super::super::MESSAGE => {
                    detail["text"].as_str().map(str::to_owned)
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn each_message_goes_on_the_timeline_once_when_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut agent = AcpAgent::detached(dir.path());
        agent.land(&chunk("I will write "));
        agent.land(&chunk("the **notes**."));
        assert!(messages(&mut agent).is_empty(), "not ended yet");
        why(agent.land(&write(1, "NOTES.md")));
        assert_eq!(messages(&mut agent), ["I will write the **notes**."]);
        why(agent.land(&write(2, "OTHER.md")));
        assert!(messages(&mut agent).is_empty(), "a message is reported once");
        agent.land(&chunk("Key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 found."));
        let tool = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "read", "title": "read"}}});
        agent.land(&tool);
        let said = messages(&mut agent);
        assert_eq!(said.len(), 1);
        assert!(said[0].starts_with("Key ") && !said[0].contains("abcdefghijklmnop"), "{said:?}");
    }

    #[test]
    fn what_reins_does_not_implement_is_answered_method_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let mut agent = AcpAgent::detached(dir.path());
        let landed = agent.land(&json!({"jsonrpc": "2.0", "id": 9, "method": "craft/drainMidTurnQueue", "params": {}}));
        assert!(matches!(landed, Landed::Dropped), "{landed:?}");
        let landed = agent.land(&json!({"jsonrpc": "2.0", "id": 10, "method": "terminal/output",
            "params": {"sessionId": "s", "terminalId": "nope"}}));
        assert!(matches!(landed, Landed::Request(Handled::Answer(Err(_)))), "{landed:?}");
    }
}
