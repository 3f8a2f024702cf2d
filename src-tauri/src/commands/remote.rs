//! Settings → Remote approvals: start and stop `reins serve` inside the app (on the app's own
//! facade), pair a device with a code and a QR code, list and revoke devices.

use std::net::SocketAddr;

use reins_core::api::DeviceView;
use serde::Serialize;
use tauri::State;

use crate::error::{IpcError, Result};
use crate::state::AppState;

#[derive(Debug, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RemoteStatus {
    /// The address browsers open; None: not serving.
    pub url: Option<String>,
    pub fingerprint: Option<String>,
    /// What listening there exposes (None on loopback).
    pub exposure: Option<String>,
}

#[derive(Debug, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct Pairing {
    pub code: String,
    pub name: String,
    pub expires_at: i64,
    /// The link to open on the device; None while not serving.
    pub link: Option<String>,
    /// The link (or the code) as a QR code, a PNG data URL.
    pub qr: String,
}

fn status_of(state: &AppState) -> RemoteStatus {
    let running = state.remote.lock().unwrap_or_else(|p| p.into_inner());
    match running.as_ref() {
        Some(r) => RemoteStatus {
            url: Some(r.url.clone()),
            fingerprint: r.fingerprint.clone(),
            exposure: reins_serve::exposure(r.addr),
        },
        None => RemoteStatus {
            url: None,
            fingerprint: None,
            exposure: None,
        },
    }
}

#[tauri::command]
#[specta::specta]
pub async fn remote_status(state: State<'_, AppState>) -> Result<RemoteStatus> {
    Ok(status_of(&state))
}

/// Starts serving on `listen` (default 127.0.0.1:8787): TLS with a self-signed certificate when
/// the address is not loopback.
#[tauri::command]
#[specta::specta]
pub async fn remote_start(
    state: State<'_, AppState>,
    listen: Option<String>,
) -> Result<RemoteStatus> {
    if state
        .remote
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_some()
    {
        return Ok(status_of(&state));
    }
    let listen = listen
        .filter(|l| !l.trim().is_empty())
        .unwrap_or_else(|| format!("127.0.0.1:{}", reins_serve::DEFAULT_PORT));
    let addr: SocketAddr = listen
        .trim()
        .parse()
        .map_err(|_| IpcError::invalid(format!("{listen:?} is not ADDRESS:PORT")))?;
    let tls = if addr.ip().is_loopback() {
        reins_serve::Tls::Off
    } else {
        reins_serve::Tls::SelfSigned
    };
    let running = reins_serve::start(
        state.reins.clone(),
        reins_serve::Config {
            listen: addr,
            allow_hosts: Vec::new(),
            tls,
        },
    )
    .await
    .map_err(|e| IpcError::invalid(e.to_string()))?;
    if let Err(e) = running.announce(state.reins.data_dir()) {
        tracing::warn!("cannot note the server's address in the data dir: {e}");
    }
    *state.remote.lock().unwrap_or_else(|p| p.into_inner()) = Some(running);
    Ok(status_of(&state))
}

#[tauri::command]
#[specta::specta]
pub async fn remote_stop(state: State<'_, AppState>) -> Result<RemoteStatus> {
    let running = state
        .remote
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if let Some(r) = running {
        reins_serve::Running::retract(state.reins.data_dir());
        r.stop().await;
    }
    Ok(status_of(&state))
}

#[tauri::command]
#[specta::specta]
pub async fn remote_pair(state: State<'_, AppState>, name: String) -> Result<Pairing> {
    let offer = state.reins.pairing_offer(&name).await?;
    let status = status_of(&state);
    let link = status
        .url
        .as_deref()
        .map(|url| reins_serve::pairing_link(url, &offer.code, status.fingerprint.as_deref()));
    let png = reins_serve::qr::png_bytes(link.as_deref().unwrap_or(&offer.code))
        .map_err(|e| IpcError::invalid(e.to_string()))?;
    use base64::Engine as _;
    Ok(Pairing {
        code: offer.code,
        name: offer.name,
        expires_at: offer.expires_at,
        link,
        qr: format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(png)
        ),
    })
}

#[tauri::command]
#[specta::specta]
pub async fn list_devices(state: State<'_, AppState>) -> Result<Vec<DeviceView>> {
    Ok(state.reins.devices().await?)
}

#[tauri::command]
#[specta::specta]
pub async fn revoke_device(state: State<'_, AppState>, id: String) -> Result<DeviceView> {
    let id = crate::args::id("device", &id)?;
    Ok(state.reins.revoke_device(&id).await?)
}
