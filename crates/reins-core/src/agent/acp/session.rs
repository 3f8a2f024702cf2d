//! One external agent process and its ACP connection: Reins is the client. The process leads its
//! own process group (ended with everything it started); its stdout and stdin carry JSON-RPC; its
//! stderr goes to a bounded, redacted log. Every request and notification the agent sends lands,
//! in order, on one channel the run's agent reads; nothing the agent sends is ever a crash.

use std::path::{Path, PathBuf};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentRequest, ClientCapabilities, FileSystemCapabilities, Implementation, InitializeRequest,
    InitializeResponse, SessionNotification,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::stderr::Tail;
use crate::keys::Secret;
use crate::process::{Piped, PipedError};

/// Environment variables the agent process inherits from Reins; the spec names the others.
pub(crate) const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "SHELL",
];

/// What the agent sent, in the order it sent it.
pub enum Incoming {
    Request {
        request: Box<AgentRequest>,
        responder: Responder<Value>,
    },
    Update(Box<SessionNotification>),
    /// The prompt turn ended: its stop reason and the session's token usage if the agent said,
    /// or the error the agent answered with.
    TurnEnded(Result<(String, Option<agent_client_protocol::v1::schema::Usage>), String>),
    /// The connection is gone (the process ended or closed its stdout).
    Closed(String),
}

/// A started agent: its process, its connection and what it said about itself.
pub struct Process {
    pub conn: ConnectionTo<Agent>,
    pub events: mpsc::UnboundedReceiver<Incoming>,
    /// For tasks that report on the same channel (a prompt's end).
    pub events_tx: mpsc::UnboundedSender<Incoming>,
    pub init: InitializeResponse,
    /// The agent's process: ended with its group when this is dropped.
    piped: Piped,
    stop: Option<oneshot::Sender<()>>,
    /// Its confinement and memory link, kept as long as it runs (dropped after it).
    held: super::confine::Held,
}

impl Process {
    /// Starts `argv` in `root` with the base environment, the variables `passed` through, `set`
    /// (what makes a known agent ask) and the keys in `env`; connects, and initializes advertising
    /// file reads and writes and terminals. Its stderr goes to `log` (bounded, redacted).
    pub async fn start(
        argv: &[String],
        root: &Path,
        env: &[(String, Secret)],
        passed: &[String],
        set: &[(&str, &str)],
        log: Option<PathBuf>,
        held: super::confine::Held,
    ) -> Result<Self, String> {
        // Confined: started through the helper, with a temp dir of its own.
        let (started, tmp) = crate::contain::launch::piped_start(held.confined.as_ref(), argv);
        let mut set = set.to_vec();
        if let Some(tmp) = &tmp {
            set.push(("TMPDIR", tmp));
        }
        let (piped, stdin, stdout) = crate::process::spawn_piped(crate::process::PipedSpec {
            argv: &started,
            confined: held.confined.is_some(),
            root,
            base_env: BASE_ENV,
            passed,
            set: &set,
            keys: env,
            log,
        })
        .map_err(|e| match e {
            PipedError::EmptyCommand => "the agent's command is empty".to_owned(),
            PipedError::Spawn { program, source } => {
                format!("cannot start the agent `{program}`: {source}")
            }
            PipedError::ExitedAtOnce => "the agent exited at once".to_owned(),
            PipedError::NoStreams => "the agent's standard streams could not be opened".to_owned(),
        })?;
        let program = argv.first().cloned().unwrap_or_default();
        let (tx, events) = mpsc::unbounded_channel();
        let (conn_tx, conn_rx) = oneshot::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let (requests, updates, closed) = (tx.clone(), tx.clone(), tx.clone());
        tokio::spawn(async move {
            let result = Client
                .v1()
                .name("reins")
                .on_receive_request(
                    async move |request: AgentRequest, responder: Responder<Value>, _cx| {
                        // The run's agent answers it; if the run is gone the responder is dropped
                        // and the agent hears an error.
                        let _ = requests.send(Incoming::Request {
                            request: Box::new(request),
                            responder,
                        });
                        Ok(())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_notification(
                    async move |n: SessionNotification, _cx| {
                        let _ = updates.send(Incoming::Update(Box::new(n)));
                        Ok(())
                    },
                    agent_client_protocol::on_receive_notification!(),
                )
                .connect_with(
                    ByteStreams::new(stdin.compat_write(), stdout.compat()),
                    async move |cx: ConnectionTo<Agent>| {
                        let _ = conn_tx.send(cx);
                        let _ = stopped.await;
                        Ok(())
                    },
                )
                .await;
            let why = match result {
                Ok(()) => "the connection to the agent closed".to_owned(),
                Err(e) => format!("the connection to the agent failed: {e}"),
            };
            let _ = closed.send(Incoming::Closed(why));
        });
        let conn = conn_rx
            .await
            .map_err(|_| format!("the agent `{program}` closed its connection at once"))?;
        let request = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(
                ClientCapabilities::new()
                    .fs(FileSystemCapabilities::new()
                        .read_text_file(true)
                        .write_text_file(true))
                    .terminal(true),
            )
            .client_info(Implementation::new("reins", env!("CARGO_PKG_VERSION")));
        let init = conn
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| format!("the agent did not initialize: {e}"))?;
        Ok(Self {
            conn,
            events,
            events_tx: tx,
            init,
            piped,
            stop: Some(stop),
            held,
        })
    }

    /// Drops the session updates that came with `session/load`: the agent replays the loaded
    /// conversation as updates, which Reins recorded when they first happened. Streamed again they
    /// would repeat old text as new, and could read as tool calls done without asking. Anything
    /// else that arrived meanwhile is kept, in order.
    pub fn forget_replay(&mut self) {
        let mut kept = Vec::new();
        while let Ok(event) = self.events.try_recv() {
            if !matches!(event, Incoming::Update(_)) {
                kept.push(event);
            }
        }
        for event in kept {
            let _ = self.events_tx.send(event);
        }
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        self.piped.running()
    }

    pub fn pid(&self) -> u32 {
        self.piped.pid
    }

    /// How the agent is confined, and what the kernel enforced.
    pub fn held(&self) -> &super::confine::Held {
        &self.held
    }

    /// The last of what the agent wrote to stderr.
    pub fn stderr(&self) -> &Tail {
        &self.piped.stderr
    }
}

impl Drop for Process {
    /// Ends the connection; then `piped`, dropped, ends the agent's whole process group.
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
