//! One MCP server, connected: Reins is the client. A server Reins starts runs in the workspace,
//! leads its own process group (ended with everything it started), gets only the base environment
//! plus what its registration names, and writes its stderr to a bounded, redacted log. Nothing a
//! server sends is ever a crash: a server that dies, hangs or answers nonsense is an error the
//! model hears.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use super::catalog::Listed;
use super::server::ServerSpec;
use super::McpError;
use crate::digest::Digest;
use crate::keys::Secret;
use crate::process::{Piped, PipedError, PipedSpec};
use crate::action::mcp::Hints;

/// Environment variables a server Reins starts inherits from Reins; its registration names others.
const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
];

/// How long a server may take to start and say what it is.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a tool listing may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may take before the model is told the server hangs.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Largest text of one call's result kept (the rest is cut, and says so).
pub const MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;

/// A connected server.
pub struct Connection {
    pub name: String,
    /// A digest of how it was started and how it named itself.
    pub identity: String,
    /// "secure-filesystem-server 0.2.0", as it named itself.
    pub label: String,
    service: RunningService<RoleClient, ClientConfig>,
    /// The process Reins started for it (none for an HTTP server): ended with its group on drop.
    process: Option<Piped>,
    /// Its confinement (its temp dir goes with it), kept as long as it runs.
    confined: Option<crate::contain::Confined>,
    /// A call timed out: what the server is doing is unknown, so it is not called again.
    hung: bool,
}

/// What a server Reins starts may reach: the workspace its tools work on (minus the protected
/// paths; each call is judged by Reins first), the places the person let it write, its program's
/// files, and the endpoints of the URLs its command line and passed variables name.
fn reach(spec: &ServerSpec, argv: &[String]) -> crate::contain::AgentReach {
    crate::contain::AgentReach {
        state: spec.may_write.clone(),
        programs: crate::contain::reach::program_trees(argv, std::env::var_os("PATH").as_deref()),
        writes_workspace: true,
        endpoints: crate::contain::reach::endpoints_named(argv, &spec.pass_env),
        serves_itself: false,
    }
}

fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("reins", env!("CARGO_PKG_VERSION")),
    )
}

impl Connection {
    /// Starts (or connects to) `spec` for a run on `root`, with `keys` (variable → value) from the
    /// keyring, and initializes. Stderr goes to `log`.
    pub async fn start(
        spec: &ServerSpec,
        root: &Path,
        keys: &[(String, Secret)],
        bearer: Option<&Secret>,
        log: Option<PathBuf>,
        contain: &crate::contain::Setup,
    ) -> Result<Self, McpError> {
        let name = spec.name.clone();
        let failed = |detail: String| McpError::Start {
            server: name.clone(),
            detail,
        };
        let unavailable = |detail: String| McpError::Unavailable {
            server: name.clone(),
            detail,
        };
        let mut confined = None;
        let (service, process) = match &spec.url {
            Some(url) => {
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                use rmcp::transport::StreamableHttpClientTransport;
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = bearer {
                    config = config.auth_header(token.expose().to_owned());
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                let service = tokio::time::timeout(START_TIMEOUT, client_info().serve(transport))
                    .await
                    .map_err(|_| unavailable(format!("{url} did not answer within {} s", START_TIMEOUT.as_secs())))?
                    .map_err(|e| unavailable(format!("{url}: {e}")))?;
                (service, None)
            }
            None => {
                let argv = spec.argv(root);
                confined = contain
                    .prepare(root, |places| {
                        crate::contain::Profile::agent(places, &reach(spec, &argv))
                    })
                    .map_err(|e| failed(format!("cannot prepare its confinement: {e}")))?;
                let (started, tmp) = crate::contain::launch::piped_start(confined.as_ref(), &argv);
                let set: Vec<(&str, &str)> =
                    tmp.as_deref().map(|t| ("TMPDIR", t)).into_iter().collect();
                let (process, stdin, stdout) = crate::process::spawn_piped(PipedSpec {
                    argv: &started,
                    confined: confined.is_some(),
                    root,
                    base_env: BASE_ENV,
                    passed: &spec.pass_env,
                    set: &set,
                    keys,
                    log,
                })
                .map_err(|e| match e {
                    PipedError::EmptyCommand => failed("its command is empty".into()),
                    PipedError::Spawn { program, source } => {
                        failed(format!("cannot start `{program}`: {source}"))
                    }
                    PipedError::ExitedAtOnce => failed("it exited at once".into()),
                    PipedError::NoStreams => {
                        failed("its standard streams could not be opened".into())
                    }
                })?;
                let served =
                    tokio::time::timeout(START_TIMEOUT, client_info().serve((stdout, stdin))).await;
                let service = match served {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        return Err(unavailable(format!("{e}{}", stderr_note(&process.stderr.text(2000)))))
                    }
                    Err(_) => {
                        return Err(unavailable(format!(
                            "it did not initialize within {} s{}",
                            START_TIMEOUT.as_secs(),
                            stderr_note(&process.stderr.text(2000))
                        )))
                    }
                };
                (service, Some(process))
            }
        };
        let (server_name, version) = service
            .peer_info()
            .and_then(|i| {
                i.server_info
                    .as_ref()
                    .map(|s| (s.name.clone(), s.version.clone()))
            })
            .unwrap_or_default();
        let identity = Digest::of(
            crate::digest::canonical_json(&serde_json::json!({
                "name": spec.name, "command": spec.command, "url": spec.url,
                "server": server_name, "version": version,
            }))
            .as_bytes(),
        )
        .to_string();
        let label = format!("{server_name} {version}").trim().to_owned();
        Ok(Self {
            name: spec.name.clone(),
            identity,
            label,
            service,
            process,
            confined,
            hung: false,
        })
    }

    /// How its process runs, in words; none for a server Reins did not start.
    pub fn confinement(&self, workspace: &Path) -> Option<String> {
        self.process.as_ref()?;
        Some(self.confined.as_ref().map_or_else(
            || crate::contain::launch::NO_HELPER.to_owned(),
            |c| c.said(workspace),
        ))
    }

    /// The process Reins started for it, if it started one.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.pid)
    }

    /// The last of what it wrote to stderr.
    pub fn stderr_tail(&self, max: usize) -> String {
        self.process
            .as_ref()
            .map(|p| p.stderr.text(max))
            .unwrap_or_default()
    }

    /// The stderr tail of a server that is gone, once it is whole: the transport may close before
    /// the reader has drained the pipe, so wait (at most a second) until the process has ended and
    /// the tail stopped growing.
    async fn last_words(&mut self) -> String {
        let mut last = self.stderr_tail(2000);
        let mut steady = 0;
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let now = self.stderr_tail(2000);
            let ended = self.process.as_mut().is_none_or(|p| !p.running());
            steady = if now == last && ended { steady + 1 } else { 0 };
            last = now;
            if steady >= 2 {
                break;
            }
        }
        last
    }

    /// Whether it is still there to call.
    pub fn alive(&mut self) -> bool {
        let running = self.process.as_mut().is_none_or(Piped::running);
        running && !self.hung && !self.service.is_transport_closed()
    }

    /// Its tools, every page of them.
    pub async fn tools(&self) -> Result<Vec<Listed>, McpError> {
        let listed = tokio::time::timeout(LIST_TIMEOUT, self.service.peer().list_all_tools())
            .await
            .map_err(|_| self.broken(format!("it did not list its tools within {} s", LIST_TIMEOUT.as_secs())))?
            .map_err(|e| self.broken(format!("listing its tools failed: {e}")))?;
        Ok(listed
            .into_iter()
            .map(|t| {
                let hints = t
                    .annotations
                    .as_ref()
                    .map(|a| Hints {
                        read_only: a.read_only_hint,
                        destructive: a.destructive_hint,
                        idempotent: a.idempotent_hint,
                        open_world: a.open_world_hint,
                    })
                    .unwrap_or_default();
                Listed {
                    tool: t.name.to_string(),
                    description: t.description.as_deref().unwrap_or_default().to_owned(),
                    input_schema: Value::Object((*t.input_schema).clone()),
                    hints,
                }
            })
            .collect())
    }

    /// Calls `tool` with `arguments`: its result as text for the model (Ok), or what went wrong
    /// (Err) — the tool's own error, the server's, or its silence.
    pub async fn call(
        &mut self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
    ) -> Result<String, String> {
        let args = match arguments {
            Value::Object(o) => o.clone(),
            _ => serde_json::Map::new(),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let sent = tokio::time::timeout(timeout, self.service.peer().call_tool(params)).await;
        match sent {
            Err(_) => {
                self.hung = true;
                Err(format!(
                    "the MCP server `{}` did not answer `{tool}` within {} s, so whether the call took effect is unknown; the server will be ended and started again for the next call",
                    self.name,
                    timeout.as_secs()
                ))
            }
            Ok(Err(e)) => {
                let note = if self.alive() {
                    String::new()
                } else {
                    format!(
                        "; the server is gone (it will be started again for the next call){}",
                        stderr_note(&self.last_words().await)
                    )
                };
                Err(format!(
                    "the MCP server `{}` failed on `{tool}`: {e}{note}",
                    self.name
                ))
            }
            Ok(Ok(result)) => {
                let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                let text = result_text(&value);
                if result.is_error == Some(true) {
                    Err(format!("`{tool}` reported an error: {text}"))
                } else {
                    Ok(text)
                }
            }
        }
    }

    fn broken(&self, detail: String) -> McpError {
        McpError::Server {
            server: self.name.clone(),
            detail: format!("{detail}{}", stderr_note(&self.stderr_tail(2000))),
        }
    }
}

fn stderr_note(tail: &str) -> String {
    let text = tail.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends:\n{text}")
    }
}

/// A tool result as text: text items as they are, the others named (an image is not shown to a
/// text model), structured content as JSON when there is nothing else.
pub fn result_text(result: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(items) = result.get("content").and_then(Value::as_array) {
        for item in items {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or("?");
            let part = match kind {
                "text" => item
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                "image" | "audio" => format!(
                    "[{kind} {}: {} bytes of base64, not shown]",
                    item.get("mimeType").and_then(Value::as_str).unwrap_or("?"),
                    item.get("data").and_then(Value::as_str).map_or(0, str::len)
                ),
                "resource" => {
                    let r = item.get("resource").cloned().unwrap_or(Value::Null);
                    let uri = r.get("uri").and_then(Value::as_str).unwrap_or("?");
                    match r.get("text").and_then(Value::as_str) {
                        Some(text) => format!("[resource {uri}]\n{text}"),
                        None => format!("[resource {uri}: binary, not shown]"),
                    }
                }
                "resource_link" => format!(
                    "[link to resource {}]",
                    item.get("uri").and_then(Value::as_str).unwrap_or("?")
                ),
                other => format!("[{other} content, not shown]"),
            };
            parts.push(part);
        }
    }
    if parts.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            parts.push(serde_json::to_string_pretty(s).unwrap_or_default());
        }
    }
    let mut text = parts.join("\n");
    if text.len() > MAX_RESULT_BYTES {
        let mut cut = MAX_RESULT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = text.len();
        text.truncate(cut);
        text.push_str(&format!("\n[cut: the result was {total} bytes]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_read_as_text_and_name_what_is_not_text() {
        let v = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
        ]});
        let t = result_text(&v);
        assert!(t.starts_with("hello\n[image image/png: 4 bytes"), "{t}");
        assert!(t.contains("[resource file:///a]\nbody"), "{t}");
        let s = result_text(&json!({"content": [], "structuredContent": {"n": 1}}));
        assert!(s.contains("\"n\": 1"), "{s}");
    }
}
