//! Claude Code's headless channel: `claude -p --input-format stream-json --output-format
//! stream-json --permission-prompt-tool stdio` writes one JSON message per line on stdout and reads
//! one per line on stdin. Reins reads what the model said and did (assistant messages, tool
//! results, the turn's result with its token usage) and answers the permission asks
//! (`control_request` `can_use_tool`) with `control_response`s. Messages Reins does not use are
//! skipped: Claude Code adds kinds in new versions.

use serde_json::{json, Value};

/// Largest line read from Claude Code.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One line from Claude Code, as Reins reads it.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// The session started: its id.
    Init { session_id: String },
    /// The model's words and the tools it calls.
    Assistant {
        text: String,
        tool_uses: Vec<ToolUse>,
    },
    /// What tools returned.
    ToolResults(Vec<ToolResult>),
    /// Claude Code asks whether a tool call may run.
    Permission {
        request_id: String,
        tool_name: String,
        input: Value,
        tool_use_id: Option<String>,
    },
    /// Another control request Reins does not answer but must not leave hanging.
    Control { request_id: String, subtype: String },
    /// The turn ended.
    Result {
        ok: bool,
        text: String,
        usage: Value,
        cost_usd: Option<f64>,
    },
    /// Anything else (system notes, a partial message, a control response).
    Other,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    pub input: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    pub tool_use_id: String,
    pub is_error: bool,
    /// Claude Code's structured account of the result (`tool_use_result`), if it sent one.
    pub detail: Value,
}

#[derive(Debug, thiserror::Error)]
#[error("Claude Code sent a line Reins cannot read: {0}")]
pub struct LineError(pub String);

/// Reads one line of Claude Code's output.
pub fn read(line: &str) -> Result<Line, LineError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(LineError("it is over 16 MiB".into()));
    }
    let v: Value = serde_json::from_str(line).map_err(|e| LineError(e.to_string()))?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(match v.get("type").and_then(Value::as_str) {
        Some("system") if v["subtype"] == "init" => Line::Init {
            session_id: text("session_id")
                .ok_or_else(|| LineError("its init names no session".into()))?,
        },
        Some("assistant") => {
            let mut said = Vec::new();
            let mut tool_uses = Vec::new();
            for block in v["message"]["content"].as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("text") => said.extend(block["text"].as_str().map(str::to_owned)),
                    Some("tool_use") => tool_uses.push(ToolUse {
                        id: block["id"].as_str().unwrap_or_default().to_owned(),
                        name: block["name"].as_str().unwrap_or_default().to_owned(),
                        input: block.get("input").cloned().unwrap_or(Value::Null),
                    }),
                    _ => {}
                }
            }
            Line::Assistant {
                text: said.join("\n"),
                tool_uses,
            }
        }
        Some("user") => {
            let mut results = Vec::new();
            for block in v["message"]["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    results.push(ToolResult {
                        tool_use_id: block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                        is_error: block["is_error"].as_bool().unwrap_or(false),
                        detail: v.get("tool_use_result").cloned().unwrap_or(Value::Null),
                    });
                }
            }
            Line::ToolResults(results)
        }
        Some("control_request") => {
            let request_id = text("request_id")
                .ok_or_else(|| LineError("a control request without a request_id".into()))?;
            let request = &v["request"];
            let subtype = request["subtype"].as_str().unwrap_or_default().to_owned();
            if subtype == "can_use_tool" {
                let tool_name = request["tool_name"]
                    .as_str()
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| LineError("a permission ask names no tool".into()))?
                    .to_owned();
                let input = request.get("input").cloned().unwrap_or(Value::Null);
                if !input.is_object() {
                    return Err(LineError("a permission ask's input is not an object".into()));
                }
                Line::Permission {
                    request_id,
                    tool_name,
                    input,
                    tool_use_id: request["tool_use_id"].as_str().map(str::to_owned),
                }
            } else {
                Line::Control {
                    request_id,
                    subtype,
                }
            }
        }
        Some("result") => Line::Result {
            ok: v["is_error"].as_bool() != Some(true) && v["subtype"] == "success",
            text: text("result").unwrap_or_default(),
            usage: v.get("usage").cloned().unwrap_or(Value::Null),
            cost_usd: v["total_cost_usd"].as_f64(),
        },
        _ => Line::Other,
    })
}

/// A prompt for the session.
pub fn user_message(text: &str) -> String {
    json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}})
        .to_string()
}

/// The answer to permission ask `request_id`: allow with `input` (as asked, or as edited).
pub fn allow(request_id: &str, input: &Value) -> String {
    respond(request_id, json!({"behavior": "allow", "updatedInput": input}))
}

/// The answer to permission ask `request_id`: deny, with the reason the model reads.
pub fn deny(request_id: &str, message: &str) -> String {
    respond(request_id, json!({"behavior": "deny", "message": message}))
}

/// The answer to a control request Reins does not take.
pub fn refuse(request_id: &str, subtype: &str) -> String {
    json!({"type": "control_response", "response": {"subtype": "error", "request_id": request_id,
        "error": format!("Reins does not answer `{subtype}` requests")}})
    .to_string()
}

fn respond(request_id: &str, response: Value) -> String {
    json!({"type": "control_response", "response": {"subtype": "success",
        "request_id": request_id, "response": response}})
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_ask_is_read_with_its_tool_input_and_ids() {
        let line = json!({"type": "control_request", "request_id": "r1", "request": {
            "subtype": "can_use_tool", "tool_name": "Write", "display_name": "Write",
            "input": {"file_path": "/w/a", "content": "x"}, "tool_use_id": "toolu_1",
            "permission_suggestions": []}});
        assert_eq!(
            read(&line.to_string()).ok(),
            Some(Line::Permission {
                request_id: "r1".into(),
                tool_name: "Write".into(),
                input: json!({"file_path": "/w/a", "content": "x"}),
                tool_use_id: Some("toolu_1".into()),
            })
        );
        let bad = json!({"type": "control_request", "request_id": "r1",
            "request": {"subtype": "can_use_tool", "tool_name": "Write", "input": "x"}});
        assert!(read(&bad.to_string()).is_err());
        assert!(read("not json").is_err());
        let other = json!({"type": "control_request", "request_id": "r2",
            "request": {"subtype": "hook_callback"}});
        assert!(matches!(read(&other.to_string()), Ok(Line::Control { .. })));
    }

    #[test]
    fn the_models_words_tool_results_and_the_end_are_read() {
        let said = json!({"type": "assistant", "message": {"content": [
            {"type": "text", "text": "I will write it."},
            {"type": "tool_use", "id": "t1", "name": "Write", "input": {"a": 1}}]}});
        let Ok(Line::Assistant { text, tool_uses }) = read(&said.to_string()) else {
            panic!("not read as the model's words");
        };
        assert_eq!((text.as_str(), tool_uses.len()), ("I will write it.", 1));
        let result = json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "done"}]},
            "tool_use_result": {"type": "create"}});
        assert_eq!(
            read(&result.to_string()).ok(),
            Some(Line::ToolResults(vec![ToolResult {
                tool_use_id: "t1".into(),
                is_error: false,
                detail: json!({"type": "create"}),
            }]))
        );
        let end = json!({"type": "result", "subtype": "success", "is_error": false,
            "result": "Done.", "usage": {"input_tokens": 3}, "total_cost_usd": 0.5});
        assert!(matches!(read(&end.to_string()), Ok(Line::Result { ok: true, .. })));
        assert_eq!(read(r#"{"type":"stream_event"}"#).ok(), Some(Line::Other));
    }

    #[test]
    fn answers_are_control_responses_to_the_ask() {
        let a: Value = serde_json::from_str(&allow("r1", &json!({"x": 1}))).unwrap_or_default();
        assert_eq!(a["response"]["request_id"], "r1");
        assert_eq!(a["response"]["response"]["updatedInput"]["x"], 1);
        let d: Value = serde_json::from_str(&deny("r1", "no")).unwrap_or_default();
        assert_eq!(d["response"]["response"]["behavior"], "deny");
        assert_eq!(d["response"]["response"]["message"], "no");
    }
}
