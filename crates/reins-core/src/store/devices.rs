//! The `pairings` and `devices` tables: one-time codes offered to a browser or phone, and the
//! devices that exchanged one for a token. Only hashes of codes and tokens are stored.

use super::Pool;

use super::decode::{self, Stored};
use super::{Result, StoreError, Tx};

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct PairingRow {
    pub id: String,
    pub code_sha256: String,
    pub name: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub device_id: Option<String>,
}

impl Stored for PairingRow {
    const TABLE: &'static str = "pairings";
    const KEY: &'static [&'static str] = &["id"];
}

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct DeviceRow {
    pub id: String,
    pub name: String,
    pub token_sha256: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

impl Stored for DeviceRow {
    const TABLE: &'static str = "devices";
    const KEY: &'static [&'static str] = &["id"];
}

pub async fn insert_pairing(tx: &mut Tx, p: &PairingRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO pairings (id, code_sha256, name, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&p.id)
    .bind(&p.code_sha256)
    .bind(&p.name)
    .bind(p.created_at)
    .bind(p.expires_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The pairing whose code hashes to `code_sha256`, used or not.
pub async fn pairing_by_code(pool: &Pool, code_sha256: &str) -> Result<Option<PairingRow>> {
    decode::optional(
        sqlx::query("SELECT * FROM pairings WHERE code_sha256 = $1")
            .bind(code_sha256)
            .fetch_optional(pool)
            .await?,
    )
}

/// Uses pairing `id` for `device` and inserts the device, in the change's transaction. Fails with
/// `Conflict` when the code was used meanwhile or has expired by `now`: a code works once.
pub async fn pair(tx: &mut Tx, pairing: &str, device: &DeviceRow, now: i64) -> Result<()> {
    let used = sqlx::query(
        "UPDATE pairings SET used_at = $1, device_id = $2
          WHERE id = $3 AND used_at IS NULL AND expires_at > $4",
    )
    .bind(now)
    .bind(&device.id)
    .bind(pairing)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    if used.rows_affected() == 0 {
        return Err(StoreError::Conflict(
            "this pairing code was used already or has expired; make a new one".into(),
        ));
    }
    sqlx::query(
        "INSERT INTO devices (id, name, token_sha256, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(&device.id)
    .bind(&device.name)
    .bind(&device.token_sha256)
    .bind(device.created_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The live (unrevoked) device whose token hashes to `token_sha256`.
pub async fn live_by_token(pool: &Pool, token_sha256: &str) -> Result<Option<DeviceRow>> {
    decode::optional(
        sqlx::query("SELECT * FROM devices WHERE token_sha256 = $1 AND revoked_at IS NULL")
            .bind(token_sha256)
            .fetch_optional(pool)
            .await?,
    )
}

/// Every device, live ones first, newest first.
pub async fn list(pool: &Pool) -> Result<Vec<DeviceRow>> {
    decode::all(
        &sqlx::query("SELECT * FROM devices ORDER BY revoked_at IS NOT NULL, created_at DESC")
            .fetch_all(pool)
            .await?,
    )
}

/// The live device named by its id, a unique prefix of it (4 characters or more), or its exact
/// name.
pub async fn find_live(pool: &Pool, key: &str) -> Result<DeviceRow> {
    let prefix_ok = key.len() >= 4 && key.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    let rows: Vec<DeviceRow> = decode::all(
        &sqlx::query(
            "SELECT * FROM devices WHERE revoked_at IS NULL
               AND (id = $1 OR name = $1 OR ($2 AND id >= $1 AND id < $1 || 'g'))
             LIMIT 2",
        )
        .bind(key)
        .bind(prefix_ok)
        .fetch_all(pool)
        .await?,
    )?;
    if rows.len() > 1 {
        return Err(StoreError::Conflict(format!(
            "{key:?} names more than one device; give its id (`reins serve devices`)"
        )));
    }
    rows.into_iter().next().ok_or_else(|| StoreError::NotFound {
        what: format!("paired device {key:?}"),
    })
}

pub async fn revoke(tx: &mut Tx, id: &str, now: i64) -> Result<()> {
    let done =
        sqlx::query("UPDATE devices SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now)
            .bind(id)
            .execute(&mut **tx)
            .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::Conflict(format!(
            "device {id} is already revoked"
        )));
    }
    Ok(())
}

/// Notes when a device was last seen. Bookkeeping, not a change of the harness's state: one
/// statement, no audit event (the decisions the device makes are audited).
pub async fn touch(pool: &Pool, id: &str, at: i64) -> Result<()> {
    sqlx::query("UPDATE devices SET last_used_at = $1 WHERE id = $2")
        .bind(at)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}
