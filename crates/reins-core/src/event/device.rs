//! The payloads of devices paired for remote approvals (`reins serve`): names and ids, never a
//! code or a token.

use serde::{Deserialize, Serialize};

/// A one-time pairing code was made for a device to be (`reins serve pair`). Never the code.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingOffered {
    pub pairing: String,
    pub name: String,
    pub expires_at: i64,
}

/// A device exchanged a pairing code for its token, or was revoked.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceChanged {
    pub device: String,
    pub name: String,
}
