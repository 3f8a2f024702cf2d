//! Pairing devices for remote approvals, and revoking them: durable changes through the one commit
//! path, each with its audit event. The code and the token are returned once and stored as hashes.

use crate::event::{self as ev, Actor, Event, Kind};
use crate::clock::now_ms;
use crate::device;
use crate::error::{Error, Result};
use crate::store::devices::{self, DeviceRow, PairingRow};
use crate::store::write::Write;
use crate::store::StoreError;

use super::commit::Change;
use super::{Engine, Silent};

/// A pairing code just made; `code` is shown once and never stored.
pub struct PairingOffer {
    pub code: String,
    pub row: PairingRow,
}

impl Engine {
    /// Makes a one-time pairing code for a device to be called `name`.
    pub async fn offer_pairing(&self, name: &str) -> Result<PairingOffer> {
        let name = device::check_name(name)?;
        let code = device::new_code()?;
        let now = now_ms();
        let row = PairingRow {
            id: uuid::Uuid::now_v7().to_string(),
            code_sha256: device::hash(&code),
            name: name.clone(),
            created_at: now,
            expires_at: now + device::PAIRING_TTL_MS,
            used_at: None,
            device_id: None,
        };
        let event = Event::new(
            Actor::User,
            None,
            ev::PairingOffered {
                pairing: row.id.clone(),
                name,
                expires_at: row.expires_at,
            },
        );
        let change = Change::rows(vec![Write::PairingOffered(Box::new(row.clone()))]).event(event);
        self.commit(None, change, None, &Silent).await?;
        Ok(PairingOffer { code, row })
    }

    /// Exchanges a pairing code for a new device and its token (returned once). A code works once
    /// and for five minutes; any other code is refused with the same words, so a guess learns
    /// nothing.
    pub async fn pair(&self, code: &str) -> Result<(DeviceRow, String)> {
        let refused = || Error::Invalid("that pairing code is not valid (wrong, used or expired)".into());
        let code = device::normalize_code(code).ok_or_else(refused)?;
        let Some(pairing) = devices::pairing_by_code(self.store.pool(), &device::hash(&code)).await?
        else {
            return Err(refused());
        };
        let now = now_ms();
        if pairing.used_at.is_some() || pairing.expires_at <= now {
            return Err(refused());
        }
        let token = device::new_token()?;
        let row = DeviceRow {
            id: uuid::Uuid::now_v7().to_string(),
            name: pairing.name.clone(),
            token_sha256: device::hash(&token),
            created_at: now,
            last_used_at: None,
            revoked_at: None,
        };
        let event = Event::new(
            Actor::System,
            None,
            Kind::DevicePaired(ev::DeviceChanged {
                device: row.id.clone(),
                name: row.name.clone(),
            }),
        );
        let change = Change::rows(vec![Write::Paired {
            pairing: pairing.id.clone(),
            device: Box::new(row.clone()),
        }])
        .event(event);
        match self.commit(None, change, None, &Silent).await {
            Ok(_) => Ok((row, token)),
            // Used by another device a moment ago, or it expired meanwhile.
            Err(Error::Store(StoreError::Conflict(_))) => Err(refused()),
            Err(e) => Err(e),
        }
    }

    /// The live device holding `token`, if any; notes that it was seen.
    pub async fn device_for_token(&self, token: &str) -> Result<Option<DeviceRow>> {
        if !token.starts_with(device::TOKEN_PREFIX) || token.len() > 128 {
            return Ok(None);
        }
        Ok(devices::live_by_token(self.store.pool(), &device::hash(token)).await?)
    }

    /// Notes when a device was last seen (bookkeeping, not audited).
    pub async fn device_seen(&self, id: &str, at: i64) -> Result<()> {
        Ok(devices::touch(self.store.pool(), id, at).await?)
    }

    pub async fn devices(&self) -> Result<Vec<DeviceRow>> {
        Ok(devices::list(self.store.pool()).await?)
    }

    /// Revokes a device by id, unique id prefix or name; its token stops working at once.
    pub async fn revoke_device(&self, key: &str) -> Result<DeviceRow> {
        let mut row = devices::find_live(self.store.pool(), key.trim()).await?;
        let event = Event::new(
            Actor::User,
            None,
            Kind::DeviceRevoked(ev::DeviceChanged {
                device: row.id.clone(),
                name: row.name.clone(),
            }),
        );
        let change = Change::rows(vec![Write::DeviceRevoked(row.id.clone())]).event(event);
        self.commit(None, change, None, &Silent).await?;
        row.revoked_at = Some(now_ms());
        Ok(row)
    }
}
