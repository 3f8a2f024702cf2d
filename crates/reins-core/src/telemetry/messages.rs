//! A model call's messages in the GenAI semantic conventions' shape (`gen_ai.input.messages`,
//! `gen_ai.output.messages`): each message a role and its parts (text, a tool call, a tool's
//! answer). Exported only with content on, and always through the secret scanner.

use serde_json::{json, Value};

use crate::provider::{Completion, Message, Role, ToolCall};

/// What was sent: the request's messages, in order.
pub fn input(messages: &[Message]) -> Value {
    Value::Array(messages.iter().map(message).collect())
}

/// What came back: one assistant message, with why it stopped.
pub fn output(reply: &Completion) -> Value {
    let mut parts = Vec::new();
    if !reply.text.is_empty() {
        parts.push(json!({ "type": "text", "content": reply.text }));
    }
    parts.extend(reply.tool_calls.iter().map(call));
    let mut m = json!({ "role": "assistant", "parts": parts });
    if let Some(reason) = &reply.finish_reason {
        m["finish_reason"] = json!(reason);
    }
    json!([m])
}

fn message(m: &Message) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut parts = Vec::new();
    match (&m.role, &m.tool_call_id) {
        (Role::Tool, Some(id)) => {
            parts.push(json!({ "type": "tool_call_response", "id": id, "response": m.content }));
        }
        _ if !m.content.is_empty() => parts.push(json!({ "type": "text", "content": m.content })),
        _ => {}
    }
    parts.extend(m.tool_calls.iter().map(call));
    json!({ "role": role, "parts": parts })
}

/// A tool call; its arguments as the object they are, or as sent when they do not parse.
fn call(c: &ToolCall) -> Value {
    let arguments = serde_json::from_str::<Value>(&c.arguments).unwrap_or_else(|_| json!(c.arguments));
    json!({ "type": "tool_call", "id": c.id, "name": c.name, "arguments": arguments })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_take_the_conventions_shape() {
        let call = ToolCall {
            id: "c1".into(),
            name: "fs_read".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        let asked = Message {
            tool_calls: vec![call.clone()],
            ..Message::system("")
        };
        let asked = Message {
            role: Role::Assistant,
            ..asked
        };
        let sent = input(&[Message::system("be careful"), Message::user("fix it"), asked, Message::tool("c1", "hello")]);
        assert_eq!(
            sent,
            json!([
                { "role": "system", "parts": [{ "type": "text", "content": "be careful" }] },
                { "role": "user", "parts": [{ "type": "text", "content": "fix it" }] },
                { "role": "assistant", "parts": [{ "type": "tool_call", "id": "c1", "name": "fs_read", "arguments": { "path": "a" } }] },
                { "role": "tool", "parts": [{ "type": "tool_call_response", "id": "c1", "response": "hello" }] },
            ])
        );
        let reply = Completion {
            text: "done".into(),
            tool_calls: vec![ToolCall { arguments: "{not json".into(), ..call }],
            finish_reason: Some("tool_calls".into()),
            usage: None,
        };
        assert_eq!(
            output(&reply),
            json!([{ "role": "assistant", "finish_reason": "tool_calls", "parts": [
                { "type": "text", "content": "done" },
                { "type": "tool_call", "id": "c1", "name": "fs_read", "arguments": "{not json" },
            ] }])
        );
    }
}
