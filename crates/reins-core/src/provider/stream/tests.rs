use futures_util::stream;

use super::*;

/// A stream as a server might send it, with every event on `data:` lines.
fn sse(events: &[&str]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

/// The body cut into pieces of `size` bytes (SSE lines and UTF-8 characters broken anywhere).
async fn read(body: &str, size: usize) -> (Result<Completion, StreamError>, Vec<String>) {
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> = body
        .as_bytes()
        .chunks(size.max(1))
        .map(|c| Ok(c.to_vec()))
        .collect();
    let mut shown = Vec::new();
    let out = collect(stream::iter(pieces), |t| shown.push(t.to_owned())).await;
    (out, shown)
}

const TEXT: [&str; 4] = [
    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Héllo"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":", wörld"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":4}}"#,
    "[DONE]",
];

#[tokio::test]
async fn text_arrives_in_pieces_and_adds_up_whatever_the_chunking() {
    let body = sse(&TEXT);
    for size in [1, 2, 3, 7, 64, body.len()] {
        let (out, shown) = read(&body, size).await;
        let c = out.unwrap_or_default();
        assert_eq!(c.text, "Héllo, wörld", "chunks of {size}");
        assert_eq!(shown.concat(), "Héllo, wörld");
        assert_eq!(c.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            c.usage,
            Some(Usage {
                prompt_tokens: 12,
                completion_tokens: 4
            })
        );
    }
}

#[tokio::test]
async fn tool_calls_split_across_chunks_and_interleaved_are_put_together() {
    let body = sse(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"fs.read","arguments":""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"fs.list","arguments":"{\"pa"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\".\"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.txt\"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]);
    for size in [1, 5, 4096] {
        let (out, shown) = read(&body, size).await;
        let c = out.unwrap_or_default();
        assert!(shown.is_empty());
        assert_eq!(
            c.tool_calls,
            [
                ToolCall {
                    id: "call_a".into(),
                    name: "fs.read".into(),
                    arguments: r#"{"path":"a.txt"}"#.into()
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "fs.list".into(),
                    arguments: r#"{"path":"."}"#.into()
                },
            ],
            "chunks of {size}"
        );
        assert_eq!(c.finish_reason.as_deref(), Some("tool_calls"));
    }
}

#[tokio::test]
async fn a_stream_cut_short_is_an_error_not_half_an_answer() {
    let body = sse(&TEXT[..2]);
    assert_eq!(read(&body, 8).await.0, Err(StreamError::Unfinished));
}

#[tokio::test]
async fn malformed_chunks_and_remote_errors_are_named() {
    let (out, _) = read(&sse(&["{not json"]), 4).await;
    assert!(matches!(out, Err(StreamError::Malformed(_))), "{out:?}");
    let (out, _) = read(&sse(&[r#"{"error":{"message":"model not found"}}"#]), 4).await;
    assert_eq!(out, Err(StreamError::Remote("model not found".into())));
}

#[tokio::test]
async fn comments_keepalives_and_crlf_are_ignored() {
    let body = format!(
        ": keep-alive\r\n\r\n{}",
        sse(&TEXT).replace("\n\n", "\r\n\r\n")
    );
    let (out, _) = read(&body, 3).await;
    assert_eq!(out.map(|c| c.text), Ok("Héllo, wörld".into()));
}

#[tokio::test]
async fn calls_without_ids_get_one() {
    let body = sse(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"fs.read","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
    ]);
    let (out, _) = read(&body, 16).await;
    assert_eq!(out.map(|c| c.tool_calls[0].id.clone()), Ok("call_0".into()));
}
