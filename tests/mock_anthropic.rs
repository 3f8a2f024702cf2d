//! A scripted Anthropic Messages server on 127.0.0.1, for driving the real Claude Code offline.
//! Each `POST /v1/messages` that offers tools takes the next turn of the script and streams it as
//! Claude Code expects (`message_start`, `content_block_*` with the tool's input as
//! `input_json_delta`, `message_delta`, `message_stop`); the request is recorded, so a test reads
//! what the model was told (a tool result, the reason a call was blocked). Requests beside the
//! work (a title, a token count) are answered outside the script.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// One reply of the model: words, then at most one tool call.
#[derive(Clone, Debug)]
pub struct Turn {
    pub text: Option<String>,
    pub tool: Option<(String, Value)>,
}

/// The model says `text` and calls `tool` with `input`.
pub fn call(text: &str, tool: &str, input: Value) -> Turn {
    Turn {
        text: Some(text.into()),
        tool: Some((tool.into(), input)),
    }
}

/// The model says `text` and ends its turn.
pub fn say(text: &str) -> Turn {
    Turn {
        text: Some(text.into()),
        tool: None,
    }
}

#[derive(Default)]
struct Inner {
    script: std::collections::VecDeque<Turn>,
    seen: Vec<Value>,
    /// The `x-api-key` of each scripted request.
    keys: Vec<Option<String>>,
    calls: usize,
}

#[derive(Clone)]
pub struct MockAnthropic {
    port: u16,
    inner: Arc<Mutex<Inner>>,
}

impl MockAnthropic {
    /// Starts the server on its own threads; it lives until the test process ends.
    pub fn start(script: Vec<Turn>) -> anyhow::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let inner = Arc::new(Mutex::new(Inner {
            script: script.into(),
            ..Inner::default()
        }));
        let shared = Arc::clone(&inner);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = serve(conn, &shared);
                });
            }
        });
        Ok(Self { port, inner })
    }

    /// What `ANTHROPIC_BASE_URL` is set to.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bodies of the scripted requests, in order.
    pub fn seen(&self) -> Vec<Value> {
        self.lock().seen.clone()
    }

    /// The `x-api-key` each scripted request came with, in order.
    pub fn api_keys(&self) -> Vec<Option<String>> {
        self.lock().keys.clone()
    }

    /// Turns not yet used.
    pub fn left(&self) -> usize {
        self.lock().script.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Every `tool_result` the model was sent in `body`, as (tool_use_id, is_error, text).
pub fn tool_results(body: &Value) -> Vec<(String, bool, String)> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for c in m["content"].as_array().into_iter().flatten() {
            if c["type"] != "tool_result" {
                continue;
            }
            let text = match &c["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                other => other.to_string(),
            };
            out.push((
                c["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                c["is_error"].as_bool().unwrap_or(false),
                text,
            ));
        }
    }
    out
}

fn serve(conn: std::net::TcpStream, inner: &Mutex<Inner>) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut conn = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let post = line.starts_with("POST");
        let mut length = 0usize;
        let mut api_key = None;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h)? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                } else if k.eq_ignore_ascii_case("x-api-key") {
                    api_key = Some(v.trim().to_owned());
                }
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (kind, out) = if !post {
            ("application/json", "{}".to_owned())
        } else if target.contains("count_tokens") {
            ("application/json", json!({"input_tokens": 10}).to_string())
        } else {
            let turn = {
                let mut inner = inner.lock().unwrap_or_else(|p| p.into_inner());
                let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
                match inner.script.pop_front().filter(|_| offers_tools) {
                    Some(turn) => {
                        inner.seen.push(body.clone());
                        inner.keys.push(api_key.clone());
                        inner.calls += 1;
                        turn
                    }
                    None if offers_tools => {
                        inner.seen.push(body.clone());
                        inner.keys.push(api_key.clone());
                        say("(the script has ended)")
                    }
                    None => say("A title"),
                }
            };
            let id = { inner.lock().unwrap_or_else(|p| p.into_inner()).calls };
            (
                "text/event-stream",
                stream(&turn, body["model"].as_str().unwrap_or("m"), id),
            )
        };
        write!(
            conn,
            "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n{out}",
            out.len()
        )?;
        conn.flush()?;
    }
}

fn stream(turn: &Turn, model: &str, n: usize) -> String {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})];
    let mut index = 0;
    if let Some(text) = &turn.text {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}));
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if let Some((name, input)) = &turn.tool {
        events.push(
            json!({"type": "content_block_start", "index": index, "content_block":
            {"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": {}}}),
        );
        events.push(
            json!({"type": "content_block_delta", "index": index, "delta":
            {"type": "input_json_delta", "partial_json": input.to_string()}}),
        );
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    let stop = if turn.tool.is_some() {
        "tool_use"
    } else {
        "end_turn"
    };
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}));
    events.push(json!({"type": "message_stop"}));
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}
