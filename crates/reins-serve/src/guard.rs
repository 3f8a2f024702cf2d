//! What every request passes before a route sees it.
//!
//! - **Host and Origin.** The `Host` header must name this server (its address, `localhost` on
//!   loopback, or a name given with `--allow-host`), so a web page on another site cannot reach it
//!   through DNS rebinding. A request that carries an `Origin` must come from the same host.
//! - **The device.** Every `/api` route but pairing needs `Authorization: Bearer <token>` of a
//!   live paired device; there are no cookies, so another site's page cannot ride on a session.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use reins_core::api::DeviceView;

use crate::error::HttpError;
use crate::Shared;

/// How often a device's "last used" is written at most.
const SEEN_EVERY_MS: i64 = 60_000;

/// The device a request was made by.
#[derive(Clone, Debug)]
pub struct Device(pub DeviceView);

impl Device {
    /// Who decided, as the audit log records a decision made from this device.
    pub fn reviewer(&self) -> String {
        reins_core::api::face::device_person(&self.0.name)
    }
}

/// The hosts a request may name: `host` or `host:port`, lower case.
#[derive(Clone, Debug)]
pub struct Hosts(Vec<String>);

impl Hosts {
    pub fn new(port: u16, names: impl IntoIterator<Item = String>) -> Self {
        let mut all = Vec::new();
        for n in names {
            let n = n.trim().to_ascii_lowercase();
            if n.is_empty() {
                continue;
            }
            all.push(format!("{n}:{port}"));
            all.push(n);
        }
        Self(all)
    }

    pub fn allows(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.0.contains(&host)
    }

    /// `scheme://host[:port]` with a host this server answers to.
    fn allows_origin(&self, origin: &str) -> bool {
        let rest = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"));
        rest.is_some_and(|h| !h.contains('/') && self.allows(h))
    }
}

fn refused(message: &str) -> Response {
    HttpError::new(StatusCode::FORBIDDEN, "forbidden", message).into_response()
}

pub async fn host_and_origin(
    State(shared): State<Arc<Shared>>,
    req: Request,
    next: Next,
) -> Response {
    // HTTP/2 (a browser over TLS) names the host in the request's authority, not a Host header.
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default();
    if !shared.hosts.allows(&host) {
        return refused(
            "this server does not answer to that Host (start it with `--allow-host NAME` to add one)",
        );
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let ok = origin.to_str().is_ok_and(|o| shared.hosts.allows_origin(o));
        if !ok {
            return refused("requests from another site's page are refused");
        }
    }
    let mut response = next.run(req).await;
    let h = response.headers_mut();
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("cache-control", "no-store"),
    ] {
        h.insert(name, header::HeaderValue::from_static(value));
    }
    response
}

fn bearer(req: &Request) -> Option<&str> {
    bearer_in(req.headers())
}

/// The bearer token of a request's headers.
pub(crate) fn bearer_in(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

pub async fn device(State(shared): State<Arc<Shared>>, mut req: Request, next: Next) -> Response {
    let Some(token) = bearer(&req) else {
        return HttpError::unauthorized().into_response();
    };
    let device = match shared.reins.device_for_token(token).await {
        Ok(Some(d)) => d,
        Ok(None) => return HttpError::unauthorized().into_response(),
        Err(e) => return HttpError::from(e).into_response(),
    };
    let now = reins_core::api::now_ms();
    let due = {
        let mut seen = shared.seen.lock().unwrap_or_else(|p| p.into_inner());
        let last = seen.get(&device.id).copied().unwrap_or(0);
        if now - last >= SEEN_EVERY_MS {
            seen.insert(device.id.clone(), now);
            true
        } else {
            false
        }
    };
    if due {
        if let Err(e) = shared.reins.device_seen(&device.id, now).await {
            tracing::warn!("cannot note that device {} was used: {e}", device.id);
        }
    }
    req.extensions_mut().insert(Device(device));
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_origins() {
        let h = Hosts::new(8787, ["127.0.0.1".into(), "localhost".into()]);
        assert!(h.allows("127.0.0.1:8787"));
        assert!(h.allows("LOCALHOST:8787"));
        assert!(!h.allows("evil.example:8787"));
        assert!(!h.allows("127.0.0.1:9999"));
        assert!(h.allows_origin("http://localhost:8787"));
        assert!(h.allows_origin("https://127.0.0.1:8787"));
        assert!(!h.allows_origin("https://evil.example"));
        assert!(!h.allows_origin("null"));
        assert!(!h.allows_origin("http://localhost:8787/x"));
    }
}
