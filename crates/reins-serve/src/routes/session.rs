//! Pairing, and what a paired device may know about the server: who it is, the version, and which
//! keys are set (never a key).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use reins_core::api::{DeviceView, KeyStatus, PairedView, ProviderDefaults};
use serde::{Deserialize, Serialize};

use super::reviews::query;
use crate::body::Body;
use crate::error::{HttpError, Result};
use crate::guard::Device;
use crate::Shared;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    code: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Paired {
    #[serde(flatten)]
    paired: PairedView,
    /// The server certificate's SHA-256 (None: plain HTTP), to compare with the pairing link's.
    fingerprint: Option<String>,
}

pub async fn pair(State(s): State<Arc<Shared>>, Body(body): Body<Pair>) -> Result<Json<Paired>> {
    let allowed = s
        .throttle
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take(Instant::now());
    if let Err(wait) = allowed {
        let mut e = HttpError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "throttled",
            format!("too many pairing attempts; try again in {wait} s"),
        );
        e.retry_after = Some(wait);
        return Err(e);
    }
    if body.code.len() > 64 {
        return Err(HttpError::invalid("that is not a pairing code"));
    }
    let paired = s.reins.pair_device(&body.code).await?;
    s.wake.notify_one();
    Ok(Json(Paired {
        paired,
        fingerprint: s.fingerprint.clone(),
    }))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    device: DeviceView,
    version: &'static str,
}

pub async fn session(Extension(device): Extension<Device>) -> Json<Session> {
    Json(Session {
        device: device.0,
        version: env!("CARGO_PKG_VERSION"),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    /// Comma-separated key names.
    names: String,
}

/// Whether each named key is in the keyring: "set" or "not set", never the key.
pub async fn keys(
    State(s): State<Arc<Shared>>,
    q: std::result::Result<Query<Keys>, QueryRejection>,
) -> Result<Json<Vec<KeyStatus>>> {
    let names: Vec<String> = query(q)?
        .names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    if names.len() > 32 {
        return Err(HttpError::invalid("ask about 32 keys at most"));
    }
    for n in &names {
        reins_core::api::check_key_name(n).map_err(HttpError::invalid)?;
    }
    Ok(Json(s.reins.keys_status(names).await?))
}

pub async fn provider(State(s): State<Arc<Shared>>) -> Result<Json<ProviderDefaults>> {
    Ok(Json(s.reins.provider_defaults().await?))
}
