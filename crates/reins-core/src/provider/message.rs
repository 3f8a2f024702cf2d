//! Chat messages as the agent keeps them and as `/v1/chat/completions` wants them.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::stream::ToolCall;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Assistant messages: the calls the model made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tool messages: the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Role::User, text)
    }

    pub fn tool(call_id: &str, text: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(call_id.to_owned()),
            ..Self::plain(Role::Tool, text)
        }
    }

    fn plain(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// The OpenAI wire form.
    pub fn wire(&self) -> Value {
        let mut m = json!({ "role": self.role, "content": self.content });
        if !self.tool_calls.is_empty() {
            m["tool_calls"] = self
                .tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id, "type": "function",
                        "function": { "name": c.name, "arguments": c.arguments },
                    })
                })
                .collect();
        }
        if let Some(id) = &self.tool_call_id {
            m["tool_call_id"] = json!(id);
        }
        m
    }

    /// The text a token counter should see (content plus the calls' names and arguments).
    pub fn countable(&self) -> String {
        let mut s = self.content.clone();
        for c in &self.tool_calls {
            s.push('\n');
            s.push_str(&c.name);
            s.push(' ');
            s.push_str(&c.arguments);
        }
        s
    }
}
