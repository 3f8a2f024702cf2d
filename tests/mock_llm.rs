//! A scripted OpenAI-compatible server on 127.0.0.1 for the LLM agent's tests: each request to
//! `/v1/chat/completions` takes the next reply from the script (streamed text, tool calls split
//! across chunks, an HTTP error, a stream that stalls) and is recorded, so a test can count requests
//! and read what the agent sent. A request for a conversation title (opencode asks its model for
//! one beside the work) is answered with a title and kept apart, so a script is only the work.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

#[derive(Clone, Debug)]
pub enum Reply {
    /// SSE `data:` payloads, sent `gap_ms` apart, then `[DONE]`.
    Stream { chunks: Vec<String>, gap_ms: u64 },
    /// An HTTP error.
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Sends these chunks, then holds the connection open and silent.
    Stall { chunks: Vec<String> },
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub body: Value,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Inner {
    script: VecDeque<Reply>,
    seen: Vec<Seen>,
    /// Title requests, answered outside the script.
    titles: usize,
    /// What `GET …/models` lists (answered outside the script), and how often it was asked.
    models: Vec<String>,
    model_lists: usize,
    /// Stop listening once this many requests were answered.
    stop_after: Option<usize>,
    stop: Arc<tokio::sync::Notify>,
}

#[derive(Clone)]
pub struct MockLlm {
    port: u16,
    inner: Arc<Mutex<Inner>>,
    stop: Arc<tokio::sync::Notify>,
}

impl MockLlm {
    /// Starts the server on its own thread; it lives until the test process ends.
    pub fn start(script: Vec<Reply>) -> anyhow::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(tokio::sync::Notify::new());
        let inner = Arc::new(Mutex::new(Inner {
            script: script.into(),
            seen: Vec::new(),
            titles: 0,
            models: vec!["mock-model".into()],
            model_lists: 0,
            stop_after: None,
            stop: Arc::clone(&stop),
        }));
        let shared = Arc::clone(&inner);
        let stopped = Arc::clone(&stop);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        std::thread::spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                loop {
                    tokio::select! {
                        accepted = listener.accept() => match accepted {
                            Ok((socket, _)) => {
                                tokio::spawn(serve(socket, Arc::clone(&shared)));
                            }
                            Err(_) => return,
                        },
                        // The listener is dropped: connections are refused from now on.
                        _ = stopped.notified() => return,
                    }
                }
            });
        });
        Ok(Self { port, inner, stop })
    }

    /// Stops listening: from now on the port refuses connections, as if the server went away.
    pub fn stop(&self) {
        self.stop.notify_one();
    }

    /// Stops listening as soon as `n` requests have come in (the `n`th is still answered).
    pub fn stop_after(&self, n: usize) {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stop_after = Some(n);
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn push(&self, reply: Reply) {
        self.lock().script.push_back(reply);
    }

    /// Requests served so far.
    pub fn count(&self) -> usize {
        self.lock().seen.len()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.lock().seen.clone()
    }

    /// Sets what `GET …/models` lists (default: `mock-model`).
    pub fn set_models(&self, models: &[&str]) {
        self.lock().models = models.iter().map(|m| (*m).to_owned()).collect();
    }

    /// `GET …/models` requests answered (outside the script: a client that checks the server, as
    /// the app's Settings does, never takes a scripted reply).
    pub fn model_lists(&self) -> usize {
        self.lock().model_lists
    }

    /// Title requests answered outside the script.
    pub fn titles(&self) -> usize {
        self.lock().titles
    }

    /// Replies not yet used.
    pub fn left(&self) -> usize {
        self.lock().script.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn serve(mut socket: tokio::net::TcpStream, inner: Arc<Mutex<Inner>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    // Headers, then the body by Content-Length.
    let (head_end, length) = loop {
        let Ok(n) = socket.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..pos]).to_string();
            let length = header(&head, "content-length")
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            break (pos + 4, length);
        }
    };
    while buf.len() < head_end + length {
        let Ok(n) = socket.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let body: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    let request_line = head.lines().next().unwrap_or("");
    if request_line.starts_with("GET ")
        && request_line
            .split_whitespace()
            .nth(1)
            .is_some_and(|p| p.trim_end_matches('/').ends_with("/models"))
    {
        let list = {
            let mut g = inner.lock().unwrap_or_else(|p| p.into_inner());
            g.model_lists += 1;
            g.models.clone()
        };
        let data: Vec<Value> = list
            .iter()
            .map(|id| serde_json::json!({"id": id, "object": "model"}))
            .collect();
        let body = serde_json::json!({"object": "list", "data": data}).to_string();
        let text = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(text.as_bytes()).await;
        let _ = socket.shutdown().await;
        return;
    }
    if is_title_request(&body) {
        inner.lock().unwrap_or_else(|p| p.into_inner()).titles += 1;
        let Reply::Stream { chunks, .. } = text("A title", 100) else {
            return;
        };
        let _ = socket.write_all(SSE_HEAD.as_bytes()).await;
        for c in chunks.iter().map(String::as_str).chain(["[DONE]"]) {
            let _ = socket.write_all(format!("data: {c}\n\n").as_bytes()).await;
        }
        let _ = socket.shutdown().await;
        return;
    }
    let reply = {
        let mut g = inner.lock().unwrap_or_else(|p| p.into_inner());
        g.seen.push(Seen {
            body,
            authorization: header(&head, "authorization"),
        });
        if g.stop_after == Some(g.seen.len()) {
            g.stop.notify_one();
        }
        g.script.pop_front()
    };
    let reply = reply.unwrap_or(Reply::Status {
        code: 500,
        headers: Vec::new(),
        body: r#"{"error":{"message":"mock script exhausted"}}"#.into(),
    });
    let sse_head = SSE_HEAD;
    match reply {
        Reply::Stream { chunks, gap_ms } => {
            if socket.write_all(sse_head.as_bytes()).await.is_err() {
                return;
            }
            for c in chunks.iter().map(String::as_str).chain(["[DONE]"]) {
                if socket
                    .write_all(format!("data: {c}\n\n").as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
                let _ = socket.flush().await;
                if gap_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(gap_ms)).await;
                }
            }
        }
        Reply::Status {
            code,
            headers,
            body,
        } => {
            let mut text = format!(
                "HTTP/1.1 {code} Mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                text.push_str(&format!("{k}: {v}\r\n"));
            }
            text.push_str("\r\n");
            text.push_str(&body);
            let _ = socket.write_all(text.as_bytes()).await;
        }
        Reply::Stall { chunks } => {
            if socket.write_all(sse_head.as_bytes()).await.is_err() {
                return;
            }
            for c in chunks {
                let _ = socket.write_all(format!("data: {c}\n\n").as_bytes()).await;
            }
            let _ = socket.flush().await;
            tokio::time::sleep(Duration::from_secs(600)).await;
        }
    }
    let _ = socket.shutdown().await;
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// opencode's side request for a conversation title (its system prompt says so).
fn is_title_request(body: &Value) -> bool {
    let first = &body["messages"][0]["content"];
    first
        .as_str()
        .or_else(|| first[0]["text"].as_str())
        .is_some_and(|t| t.starts_with("You are a title generator"))
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_owned())
    })
}

/// A final answer streamed in pieces of `piece` characters, with usage.
pub fn text(answer: &str, piece: usize) -> Reply {
    let chars: Vec<char> = answer.chars().collect();
    let mut chunks: Vec<String> = chars
        .chunks(piece.max(1))
        .map(|c| {
            json!({ "choices": [{ "index": 0, "delta": { "content": c.iter().collect::<String>() } }] })
                .to_string()
        })
        .collect();
    chunks.push(
        json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }).to_string(),
    );
    chunks.push(usage(120, 30));
    Reply::Stream { chunks, gap_ms: 0 }
}

/// Tool calls (id, function name, JSON arguments), each one's arguments split into three chunks,
/// the calls interleaved by index as a real server sends parallel calls.
pub fn calls(said: &str, calls: &[(&str, &str, &str)]) -> Reply {
    let mut chunks = Vec::new();
    if !said.is_empty() {
        chunks
            .push(json!({ "choices": [{ "index": 0, "delta": { "content": said } }] }).to_string());
    }
    for (i, (id, name, _)) in calls.iter().enumerate() {
        chunks.push(
            json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [
                { "index": i, "id": id, "type": "function", "function": { "name": name, "arguments": "" } }
            ] } }] })
            .to_string(),
        );
    }
    for third in 0..3 {
        for (i, (_, _, args)) in calls.iter().enumerate() {
            let chars: Vec<char> = args.chars().collect();
            let size = chars.len().div_ceil(3).max(1);
            let piece: String = chars.iter().skip(third * size).take(size).collect();
            chunks.push(
                json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [
                    { "index": i, "function": { "arguments": piece } }
                ] } }] })
                .to_string(),
            );
        }
    }
    chunks.push(
        json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] })
            .to_string(),
    );
    chunks.push(usage(200, 40));
    Reply::Stream { chunks, gap_ms: 0 }
}

fn usage(prompt: u64, completion: u64) -> String {
    json!({ "choices": [], "usage": { "prompt_tokens": prompt, "completion_tokens": completion } })
        .to_string()
}

pub fn status(code: u16, retry_after: Option<&str>) -> Reply {
    Reply::Status {
        code,
        headers: retry_after
            .map(|r| vec![("retry-after".to_owned(), r.to_owned())])
            .unwrap_or_default(),
        body: json!({ "error": { "message": format!("mock says {code}") } }).to_string(),
    }
}

/// The tool messages of a recorded request: (tool_call_id, content).
pub fn tool_results(seen: &Seen) -> Vec<(String, String)> {
    seen.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}
