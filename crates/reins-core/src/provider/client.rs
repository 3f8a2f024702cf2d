//! One request to `/v1/chat/completions`, streamed. What goes wrong is sorted: a refused
//! connection, a reset, 429, 5xx, a stalled or broken stream are transient (the harness retries them
//! under the run's retry budget, honouring `Retry-After`); any other 4xx is permanent and shown as
//! the server said it (401: the key; 404: the model or the URL). The API key travels only in the
//! `Authorization` header, marked sensitive, and never appears in an error.

use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{json, Value};

use super::message::Message;
use super::stream::{self, Completion, StreamError};
use super::Settings;
use crate::keys::Secret;

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ProviderError {
    #[error("cannot reach the model server at {url}: {detail}")]
    Connect { url: String, detail: String },
    /// Nothing listens at the address, or its host name does not resolve: no server is there.
    #[error("nothing answers at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("the model server answered {status}: {message}")]
    Status {
        status: u16,
        message: String,
        /// From `Retry-After` (seconds or an HTTP date), in milliseconds.
        retry_after_ms: Option<u64>,
    },
    #[error("the model server was silent for {secs} s ({phase})")]
    Timeout { secs: u64, phase: &'static str },
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error("invalid model settings: {0}")]
    Settings(String),
}

impl ProviderError {
    /// Worth trying again later.
    pub fn is_transient(&self) -> bool {
        match self {
            ProviderError::Connect { .. }
            | ProviderError::Unreachable { .. }
            | ProviderError::Timeout { .. } => true,
            ProviderError::Status { status, .. } => {
                *status == 429 || *status == 408 || *status >= 500
            }
            ProviderError::Stream(e) => !matches!(e, StreamError::Remote(_)),
            ProviderError::Settings(_) => false,
        }
    }

    pub fn retry_after_ms(&self) -> Option<u64> {
        match self {
            ProviderError::Status { retry_after_ms, .. } => *retry_after_ms,
            _ => None,
        }
    }

    /// What a person should do about a permanent error.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            ProviderError::Status { status: 401 | 403, .. } => Some(
                "check the API key: `reins keys status`, `reins keys set NAME`, and run with --key NAME",
            ),
            ProviderError::Status { status: 404, .. } => Some(
                "check the base URL (it ends in /v1) and that the model exists on the server (`ollama list`)",
            ),
            ProviderError::Status { status: 400 | 422, .. } => Some(
                "the server refused the request; a model without tool support, or a window too large for it, are common causes",
            ),
            ProviderError::Connect { .. } | ProviderError::Unreachable { .. } => Some(
                "is the server running? For Ollama: `ollama serve`, then `ollama pull MODEL`",
            ),
            _ => None,
        }
    }
}

pub struct Client {
    http: reqwest::Client,
    settings: Settings,
    key: Option<Secret>,
}

/// Most bytes of an error body kept for the message.
const ERROR_BODY_LIMIT: usize = 600;

impl Client {
    pub fn new(settings: Settings, key: Option<Secret>) -> Result<Self, ProviderError> {
        settings.check().map_err(ProviderError::Settings)?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(settings.timeout_s.min(30)))
            // Never follow a redirect with the key to another host.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("reins/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Settings(e.to_string()))?;
        Ok(Self {
            http,
            settings,
            key,
        })
    }

    /// The request body (no key in it: the key goes in a header).
    pub fn body(&self, messages: &[Message], tools: &[Value]) -> Value {
        let mut body = json!({
            "model": self.settings.model,
            "messages": messages.iter().map(Message::wire).collect::<Vec<_>>(),
            "stream": true,
            "stream_options": { "include_usage": true },
            "max_tokens": self.settings.max_output,
        });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools.to_vec());
        }
        if let Some(t) = self.settings.temperature {
            body["temperature"] = json!(t);
        }
        body
    }

    /// The request with the API key, if any, in its `Authorization` header (marked sensitive).
    fn authorized(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::RequestBuilder, ProviderError> {
        let Some(key) = &self.key else {
            return Ok(request);
        };
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", key.expose()))
            .map_err(|_| ProviderError::Settings("the stored API key has characters a header cannot carry; set it again with `reins keys set`".into()))?;
        value.set_sensitive(true);
        Ok(request.header(reqwest::header::AUTHORIZATION, value))
    }

    /// The models the server offers (`GET {base}/models`), by id.
    pub async fn models(&self) -> Result<Vec<String>, ProviderError> {
        let url = format!("{}/models", self.settings.base_url.trim_end_matches('/'));
        let silent = Duration::from_secs(self.settings.timeout_s.min(30));
        let request = self.authorized(self.http.get(&url))?;
        let response = match tokio::time::timeout(silent, request.send()).await {
            Err(_) => {
                return Err(ProviderError::Timeout {
                    secs: silent.as_secs(),
                    phase: "waiting for the model list",
                })
            }
            Ok(Err(e)) => {
                return Err(match nobody_there(&e) {
                    Some(why) => ProviderError::Unreachable { url, detail: why.into() },
                    None => ProviderError::Connect { url, detail: describe(&e) },
                })
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        let text = tokio::time::timeout(silent, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        if !status.is_success() {
            return Err(ProviderError::Status {
                status: status.as_u16(),
                message: error_message(status, &text),
                retry_after_ms: None,
            });
        }
        let body: Value = serde_json::from_str(&text).map_err(|e| {
            ProviderError::Stream(StreamError::Remote(format!(
                "the model list is not JSON ({e}); is {url} an OpenAI-compatible server?"
            )))
        })?;
        let ids = body
            .get("data")
            .and_then(Value::as_array)
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .ok_or_else(|| {
                ProviderError::Stream(StreamError::Remote(format!(
                    "the model list has no `data` array; is {url} an OpenAI-compatible server?"
                )))
            })?;
        Ok(ids)
    }

    /// Sends one request and reads the whole streamed answer, handing text to `on_text` as it comes.
    pub async fn complete(
        &self,
        messages: &[Message],
        tools: &[Value],
        mut on_text: impl FnMut(&str),
    ) -> Result<Completion, ProviderError> {
        let url = self.settings.endpoint();
        let silent = Duration::from_secs(self.settings.timeout_s);
        let request = self.authorized(
            self.http
                .post(&url)
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(self.body(messages, tools).to_string()),
        )?;
        let response = match tokio::time::timeout(silent, request.send()).await {
            Err(_) => {
                return Err(ProviderError::Timeout {
                    secs: self.settings.timeout_s,
                    phase: "waiting for the response",
                })
            }
            Ok(Err(e)) => {
                return Err(match nobody_there(&e) {
                    Some(why) => ProviderError::Unreachable {
                        url: url.clone(),
                        detail: why.into(),
                    },
                    None => ProviderError::Connect {
                        url: url.clone(),
                        detail: describe(&e),
                    },
                })
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after_ms = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(retry_after);
            let text = tokio::time::timeout(silent, response.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            return Err(ProviderError::Status {
                status: status.as_u16(),
                message: error_message(status, &text),
                retry_after_ms,
            });
        }
        let secs = self.settings.timeout_s;
        // Each chunk must come within the silence limit, or the stream counts as stalled.
        let body = response.bytes_stream().map(|r| r.map_err(|e| describe(&e)));
        let guarded = futures_util::stream::unfold(
            (Box::pin(body), false),
            move |(mut body, ended)| async move {
                if ended {
                    return None;
                }
                match tokio::time::timeout(silent, body.next()).await {
                    Ok(Some(item)) => Some((item, (body, false))),
                    Ok(None) => None,
                    Err(_) => Some((Err(format!("{STALLED} {secs} s")), (body, true))),
                }
            },
        );
        let completion = stream::collect(Box::pin(guarded), &mut on_text).await;
        match completion {
            Err(StreamError::Transport(detail)) if detail.contains(STALLED) => {
                Err(ProviderError::Timeout {
                    secs,
                    phase: "in the middle of the answer",
                })
            }
            other => other.map_err(ProviderError::from),
        }
    }
}

const STALLED: &str = "stalled for";

/// A reqwest error without its URL's query (there is never a key in it, but be sure) and with the
/// root cause, which is what a person needs ("Connection refused").
/// Why no server can be there: the connection was refused, or the host name does not resolve.
fn nobody_there(e: &reqwest::Error) -> Option<&'static str> {
    if !e.is_connect() {
        return None;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return Some("the connection was refused (no server listens there)");
            }
        }
        let text = s.to_string();
        if text.contains("dns error")
            || text.contains("failed to lookup address")
            || text.contains("Name or service not known")
        {
            return Some("the host name does not resolve");
        }
        source = s.source();
    }
    None
}

fn describe(e: &reqwest::Error) -> String {
    // Display without the URL (there is never a key in it, but be sure), then each cause.
    let mut text = match e.url() {
        Some(url) => e.to_string().replace(url.as_str(), "(the endpoint)"),
        None => e.to_string(),
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    crate::secrets::redact(&text).into_owned()
}

/// `Retry-After`: delay-seconds or an HTTP date.
fn retry_after(value: &str) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs.saturating_mul(1000));
    }
    let at = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    let ms = at.as_millisecond() - jiff::Timestamp::now().as_millisecond();
    Some(u64::try_from(ms.max(0)).unwrap_or(0))
}

/// The server's own message when it sent the OpenAI error shape, else the start of the body.
fn error_message(status: reqwest::StatusCode, body: &str) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("error")))
        .and_then(|m| m.as_str().map(str::to_owned))
        .unwrap_or_else(|| body.trim().chars().take(ERROR_BODY_LIMIT).collect());
    let reason = status.canonical_reason().unwrap_or("");
    let text = if message.is_empty() {
        reason.to_owned()
    } else {
        format!("{reason}: {message}")
    };
    crate::secrets::redact(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_and_permanent_are_told_apart() {
        let status = |s| ProviderError::Status {
            status: s,
            message: String::new(),
            retry_after_ms: None,
        };
        for s in [429, 500, 502, 503, 408] {
            assert!(status(s).is_transient(), "{s}");
        }
        for s in [400, 401, 403, 404, 422] {
            assert!(!status(s).is_transient(), "{s}");
        }
        assert!(ProviderError::Stream(StreamError::Unfinished).is_transient());
        assert!(!ProviderError::Stream(StreamError::Remote("no".into())).is_transient());
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(retry_after("3"), Some(3000));
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(0));
        assert_eq!(retry_after("soon"), None);
    }

    #[test]
    fn error_messages_come_from_the_openai_shape_and_hide_keys() {
        let m = error_message(
            reqwest::StatusCode::UNAUTHORIZED,
            r#"{"error":{"message":"Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"}}"#,
        );
        assert!(
            m.starts_with("Unauthorized: Incorrect API key provided"),
            "{m}"
        );
        assert!(!m.contains("abcdefghijklmnop"), "{m}");
    }
}
