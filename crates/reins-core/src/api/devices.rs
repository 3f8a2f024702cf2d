//! Devices paired for remote approvals (`reins serve`): offering a one-time code, exchanging it for
//! a token, listing and revoking. The faces (the CLI, the app's Settings, the HTTP server) call
//! these; the code and the token are shown once and stored only as hashes.

use serde::Serialize;

use super::{Reins, Result};
use crate::store::devices::DeviceRow;

/// A device as the faces list it. Never its token.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DeviceView {
    pub id: String,
    pub name: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

impl From<DeviceRow> for DeviceView {
    fn from(r: DeviceRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        }
    }
}

/// A pairing code, shown once: typed on the device or read from its QR code.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PairingView {
    pub code: String,
    /// The name the device will have.
    pub name: String,
    pub expires_at: i64,
}

/// A device just paired, with its token: the only time the token is seen.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PairedView {
    pub device: DeviceView,
    pub token: String,
}

impl Reins {
    /// A one-time pairing code for a device to be called `name`; it works once, for 5 minutes.
    pub async fn pairing_offer(&self, name: &str) -> Result<PairingView> {
        let offer = self.engine.offer_pairing(name).await?;
        Ok(PairingView {
            code: offer.code,
            name: offer.row.name,
            expires_at: offer.row.expires_at,
        })
    }

    /// Exchanges a pairing code for a device and its token.
    pub async fn pair_device(&self, code: &str) -> Result<PairedView> {
        let (row, token) = self.engine.pair(code).await?;
        Ok(PairedView {
            device: row.into(),
            token,
        })
    }

    /// The live device holding `token` (None: no such device, or revoked).
    pub async fn device_for_token(&self, token: &str) -> Result<Option<DeviceView>> {
        Ok(self.engine.device_for_token(token).await?.map(Into::into))
    }

    /// Notes when a device was last seen.
    pub async fn device_seen(&self, id: &str, at: i64) -> Result<()> {
        self.engine.device_seen(id, at).await
    }

    /// Every paired device, live ones first.
    pub async fn devices(&self) -> Result<Vec<DeviceView>> {
        Ok(self
            .engine
            .devices()
            .await?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Revokes a device by id, unique id prefix or name.
    pub async fn revoke_device(&self, key: &str) -> Result<DeviceView> {
        Ok(self.engine.revoke_device(key).await?.into())
    }
}
