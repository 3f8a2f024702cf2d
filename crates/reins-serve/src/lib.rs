//! `reins serve`: the approvals inbox over HTTP, for a browser on another machine or a phone. A
//! third face over the same `reins_core::api::Reins` as the CLI and the desktop app: the same
//! checks, the same decisions bound to the action the card showed, the same audit log, with each
//! decision naming the device that made it.
//!
//! Secure by default: it listens on 127.0.0.1 unless told otherwise (and then says what that
//! exposes), every `/api` route but pairing needs a paired device's bearer token, Host and Origin
//! are checked, bodies are capped, pairing is throttled, and no secret is ever served.

mod assets;
mod body;
pub mod error;
mod guard;
mod live;
pub mod qr;
mod routes;
mod throttle;
pub mod tls;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use reins_core::api::Reins;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, Notify};

pub use body::MAX_BODY;
pub use throttle::{BURST as PAIRING_BURST, REFILL as PAIRING_REFILL};

/// The port `reins serve` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 8787;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("TLS: {0}")]
    Tls(String),
    #[error("QR code: {0}")]
    Qr(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Core(#[from] reins_core::api::Error),
}

/// Where the certificate comes from.
#[derive(Clone, Debug)]
pub enum Tls {
    /// Plain HTTP: loopback, or behind a reverse proxy that terminates TLS.
    Off,
    /// A self-signed certificate made on first start (rcgen), its key in the OS keyring.
    SelfSigned,
    Files {
        cert: PathBuf,
        key: PathBuf,
    },
}

#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    /// Host names (or addresses) besides the listening address that requests may name.
    pub allow_hosts: Vec<String>,
    pub tls: Tls,
}

/// What every handler shares.
pub struct Shared {
    reins: Arc<Reins>,
    hosts: guard::Hosts,
    throttle: Mutex<throttle::Throttle>,
    changes: broadcast::Sender<live::Changed>,
    /// Woken after a request changed something, so browsers hear of it at once.
    wake: Arc<Notify>,
    /// When each device's "last used" was last written.
    seen: Mutex<HashMap<String, i64>>,
    fingerprint: Option<String>,
    /// The pending approvals' JSON while nothing changes.
    pending: Mutex<Option<routes::reviews::Cached>>,
}

/// A running server.
pub struct Running {
    pub addr: SocketAddr,
    /// The address to open, as this machine knows it.
    pub url: String,
    /// The certificate's SHA-256 when serving TLS.
    pub fingerprint: Option<String>,
    /// Where the certificate came from, for the start message.
    pub tls_note: Option<String>,
    handle: axum_server::Handle<SocketAddr>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops accepting, lets requests in flight finish (up to 5 s), and returns.
    pub async fn stop(self) {
        self.handle
            .graceful_shutdown(Some(std::time::Duration::from_secs(5)));
        let _ = self.task.await;
        self.watcher.abort();
    }

    /// Serves until the server fails.
    pub async fn wait(self) -> std::io::Result<()> {
        let out = match self.task.await {
            Ok(r) => r,
            Err(e) => Err(std::io::Error::other(e)),
        };
        self.watcher.abort();
        out
    }
}

fn is_loopback(ip: IpAddr) -> bool {
    ip.is_loopback()
}

/// The names a request to `listen` may carry in its Host header.
fn host_names(listen: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    match listen.ip() {
        IpAddr::V4(ip) => names.push(ip.to_string()),
        IpAddr::V6(ip) => names.push(format!("[{ip}]")),
    }
    if is_loopback(listen.ip()) || listen.ip().is_unspecified() {
        names.extend(["127.0.0.1".into(), "localhost".into(), "[::1]".into()]);
    }
    if listen.ip().is_unspecified() {
        if let Some(host) = hostname() {
            names.push(format!("{host}.local"));
            names.push(host);
        }
    }
    names.extend(extra.iter().cloned());
    names.dedup();
    names
}

fn hostname() -> Option<String> {
    let uname = rustix::system::uname();
    let name = uname.nodename().to_str().ok()?.trim().to_ascii_lowercase();
    (!name.is_empty()).then_some(name)
}

/// What listening on `listen` exposes, when it is more than this machine; None on loopback.
pub fn exposure(listen: SocketAddr) -> Option<String> {
    if is_loopback(listen.ip()) {
        return None;
    }
    Some(if listen.ip().is_unspecified() {
        format!(
            "listening on every network interface ({listen}): anyone who can reach this machine on port {} can try to pair. Only paired devices can do anything, but prefer 127.0.0.1 with SSH port forwarding or a reverse proxy (docs/remote-approvals.md)",
            listen.port()
        )
    } else {
        format!(
            "listening on {listen}: every machine that can reach {} can try to pair. Only paired devices can do anything (docs/remote-approvals.md)",
            listen.ip()
        )
    })
}

/// Starts serving `reins` as `config` says; returns once it listens.
pub async fn start(reins: Arc<Reins>, config: Config) -> Result<Running, ServeError> {
    let bind_error = |source| ServeError::Bind {
        addr: config.listen,
        source,
    };
    let listener = std::net::TcpListener::bind(config.listen).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    // Port 0 asks for any free port: the names carry the one given.
    let addr = listener.local_addr().map_err(bind_error)?;
    let names = host_names(addr, &config.allow_hosts);
    let material = match &config.tls {
        Tls::Off => None,
        Tls::SelfSigned => {
            let cert_names: Vec<String> = names
                .iter()
                .map(|n| n.trim_start_matches('[').trim_end_matches(']').to_owned())
                .collect();
            Some(tls::self_signed(&reins, &cert_names).await?)
        }
        Tls::Files { cert, key } => Some(tls::from_files(cert, key)?),
    };
    let (changes, _) = broadcast::channel(64);
    let wake = Arc::new(Notify::new());
    let shared = Arc::new(Shared {
        reins: Arc::clone(&reins),
        hosts: guard::Hosts::new(addr.port(), names.clone()),
        throttle: Mutex::new(throttle::Throttle::default()),
        changes: changes.clone(),
        wake: Arc::clone(&wake),
        seen: Mutex::new(HashMap::new()),
        fingerprint: material.as_ref().map(|m| m.fingerprint.clone()),
        pending: Mutex::new(None),
    });
    let app = routes::router(Arc::clone(&shared))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .into_make_service();
    let handle = axum_server::Handle::new();
    let task = match &material {
        None => {
            let server = axum_server::from_tcp(listener)
                .map_err(|source| ServeError::Bind { addr, source })?
                .handle(handle.clone());
            tokio::spawn(server.serve(app))
        }
        Some(m) => {
            // Both crypto providers are linked into the workspace; say which one serves.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let tls = axum_server::tls_rustls::RustlsConfig::from_pem(
                m.cert_pem.clone(),
                m.key_pem.clone(),
            )
            .await
            .map_err(|e| ServeError::Tls(format!("the certificate or key does not load: {e}")))?;
            let server = axum_server::from_tcp_rustls(listener, tls)
                .map_err(|source| ServeError::Bind { addr, source })?
                .handle(handle.clone());
            tokio::spawn(server.serve(app))
        }
    };
    let watcher = tokio::spawn(live::watch(reins, wake, changes));
    let scheme = if material.is_some() { "https" } else { "http" };
    // The name to show: the machine's LAN name when listening everywhere, else the address.
    let shown = if addr.ip().is_unspecified() {
        names.iter().find(|n| n.ends_with(".local")).cloned()
    } else {
        names.first().cloned()
    }
    .unwrap_or_else(|| "127.0.0.1".into());
    Ok(Running {
        addr,
        url: format!("{scheme}://{shown}:{}/", addr.port()),
        fingerprint: material.as_ref().map(|m| m.fingerprint.clone()),
        tls_note: material.map(|m| m.note),
        handle,
        task,
        watcher,
    })
}

/// What a running server leaves in the data dir, so `reins serve pair` can print a link to it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Announced {
    pub url: String,
    pub fingerprint: Option<String>,
    pub pid: u32,
}

fn announce_file(data_dir: &Path) -> PathBuf {
    data_dir.join("serve").join("listening.json")
}

impl Running {
    /// Leaves the address in the data dir (removed by [`Running::retract`]).
    pub fn announce(&self, data_dir: &Path) -> std::io::Result<()> {
        let file = announce_file(data_dir);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let a = Announced {
            url: self.url.clone(),
            fingerprint: self.fingerprint.clone(),
            pid: std::process::id(),
        };
        std::fs::write(
            file,
            serde_json::to_vec_pretty(&a).map_err(std::io::Error::other)?,
        )
    }

    pub fn retract(data_dir: &Path) {
        let _ = std::fs::remove_file(announce_file(data_dir));
    }
}

/// The server running on this data dir, if one announced itself and its process is alive.
pub fn announced(data_dir: &Path) -> Option<Announced> {
    let text = std::fs::read(announce_file(data_dir)).ok()?;
    let a: Announced = serde_json::from_slice(&text).ok()?;
    let pid = rustix::process::Pid::from_raw(i32::try_from(a.pid).ok()?)?;
    rustix::process::test_kill_process(pid).ok()?;
    Some(a)
}

/// The link a device opens to pair: the UI's address with the code (and the certificate's
/// fingerprint) after `#`, which a browser never sends to a server.
pub fn pairing_link(url: &str, code: &str, fingerprint: Option<&str>) -> String {
    let mut link = format!("{url}#pair={code}");
    if let Some(fp) = fingerprint {
        link.push_str("&fp=");
        link.push_str(&fp.replace(':', ""));
    }
    link
}
