//! A canned OpenAI-compatible chat server for the benches: it answers the `i`-th request (from 0)
//! with the streamed chunks `reply(i)` returns, one connection per request.

use std::io::{Read, Write};

use serde_json::{json, Value};

/// Starts the server on a free local port; returns its base URL (`http://127.0.0.1:PORT/v1`).
pub fn start(reply: impl Fn(usize) -> Vec<Value> + Send + 'static) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (i, stream) in listener.incoming().enumerate() {
            let Ok(mut s) = stream else { continue };
            read_request(&mut s);
            let mut body = String::from(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
            );
            for chunk in reply(i) {
                body.push_str(&format!("data: {chunk}\n\n"));
            }
            body.push_str("data: [DONE]\n\n");
            let _ = s.write_all(body.as_bytes());
        }
    });
    url
}

/// Reads one request whole (headers and the body its content-length announces).
fn read_request(s: &mut std::net::TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let k = s.read(&mut chunk).unwrap_or(0);
        buf.extend_from_slice(&chunk[..k]);
        let text = String::from_utf8_lossy(&buf);
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return;
            }
        }
        if k == 0 {
            return;
        }
    }
}

/// A reply saying `text` and calling `calls` (id, function, JSON arguments).
#[allow(dead_code)]
pub fn calls(text: &str, calls: &[(String, String, String)]) -> Vec<Value> {
    let mut out = Vec::new();
    if !text.is_empty() {
        out.push(json!({"choices": [{"index": 0, "delta": {"content": text}}]}));
    }
    for (c, (id, name, args)) in calls.iter().enumerate() {
        out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{
            "index": c, "id": id, "type": "function",
            "function": {"name": name, "arguments": args}
        }]}}]}));
    }
    out.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    out
}

/// A final answer.
#[allow(dead_code)]
pub fn text(text: &str) -> Vec<Value> {
    vec![
        json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]
}
