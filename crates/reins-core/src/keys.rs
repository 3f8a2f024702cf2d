//! API keys: only in the OS keyring (Secret Service on Linux, Keychain on macOS, Credential Manager
//! on Windows), behind [`SecretStore`] so tests use an in-memory fake. When the keyring cannot be
//! reached Reins says how to fix it and refuses: a key is never written to a file, the database, a
//! checkpoint, a log or the environment. [`Secret`] prints as `[secret]`.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// The keyring service name every Reins key is stored under (the entry's user is the key's name).
pub const SERVICE: &str = "dev.reins.api-key";

/// A key in memory. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[secret]")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[secret]")
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum KeyError {
    #[error("the OS keyring is not available ({detail}). {FIX}")]
    Unavailable { detail: String },
    #[error("the OS keyring is locked or refused access ({detail}); unlock it (log in to the desktop session, or `gnome-keyring-daemon --unlock`) and try again")]
    Locked { detail: String },
    #[error("no key named {0:?} is stored; `reins keys set {0}` stores one")]
    Missing(String),
    #[error("invalid key name {0:?}: use 1 to 64 letters, digits, '-', '_' or '.'")]
    BadName(String),
    #[error("{0}")]
    Invalid(String),
}

const FIX: &str = "Reins keeps API keys only in the OS keyring and will not store one anywhere else. On Linux it needs a Secret Service on the session D-Bus: log in to a desktop session (GNOME Keyring or KWallet), or on a headless machine install `gnome-keyring` and `dbus` and run Reins under `dbus-run-session` with `gnome-keyring-daemon --unlock` (see the README).";

/// 1 to 64 letters, digits, '-', '_' or '.': the names of keys and of registered agents.
pub(crate) fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Checks a key's name (it becomes the keyring entry's user).
pub fn check_name(name: &str) -> Result<(), String> {
    if is_plain_name(name) {
        Ok(())
    } else {
        Err(KeyError::BadName(name.to_owned()).to_string())
    }
}

fn name_ok(name: &str) -> Result<(), KeyError> {
    check_name(name).map_err(|_| KeyError::BadName(name.to_owned()))
}

/// Checks a key's text before it is stored.
pub fn check_value(value: &str) -> Result<(), KeyError> {
    let v = value.trim();
    if v.is_empty() {
        return Err(KeyError::Invalid("the key is empty".into()));
    }
    if v.len() > 4096 || v.chars().any(char::is_control) || v.contains(' ') {
        return Err(KeyError::Invalid(
            "the key has spaces or control characters, or is over 4096 bytes; paste only the key"
                .into(),
        ));
    }
    Ok(())
}

/// Runs keyring calls on a blocking thread: they block on D-Bus.
pub async fn off_thread<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, KeyError> + Send + 'static,
) -> Result<T, KeyError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| KeyError::Unavailable {
            detail: format!("keyring task failed: {e}"),
        })?
}

/// [`SecretStore::get`] off the async threads.
pub async fn get_blocking(
    store: std::sync::Arc<dyn SecretStore>,
    name: &str,
) -> Result<Option<Secret>, KeyError> {
    let name = name.to_owned();
    off_thread(move || store.get(&name)).await
}

/// The 32 random bytes kept (base64) in the keyring entry `name`: one of Reins' own keys (the
/// sealing key, the audit key), never on disk. Made and stored when `create` and there is none yet;
/// when two processes make one at once, whichever the keyring kept is used. Blocking.
pub(crate) fn own_key(
    keys: &dyn SecretStore,
    name: &str,
    create: bool,
    what: &str,
) -> Result<Option<[u8; 32]>, KeyError> {
    use base64::Engine as _;
    use ring::rand::SecureRandom as _;
    let stored = match keys.get(name)? {
        Some(found) => found,
        None if !create => return Ok(None),
        None => {
            let mut bytes = [0u8; 32];
            ring::rand::SystemRandom::new()
                .fill(&mut bytes)
                .map_err(|_| KeyError::Invalid("the system has no source of randomness".into()))?;
            let made = Secret::new(base64::engine::general_purpose::STANDARD.encode(bytes));
            keys.set(name, &made)?;
            keys.get(name)?.unwrap_or(made)
        }
    };
    base64::engine::general_purpose::STANDARD
        .decode(stored.expose().trim())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
        .map(Some)
        .ok_or_else(|| {
            KeyError::Invalid(format!(
                "the keyring entry {name:?} is not {what} (32 bytes of base64)"
            ))
        })
}

pub trait SecretStore: Send + Sync {
    /// Whether keys can be stored and read now; the error says how to fix it.
    fn probe(&self) -> Result<(), KeyError>;
    fn set(&self, name: &str, key: &Secret) -> Result<(), KeyError>;
    /// None when no key has that name.
    fn get(&self, name: &str) -> Result<Option<Secret>, KeyError>;
    /// Whether there was one to delete.
    fn delete(&self, name: &str) -> Result<bool, KeyError>;
}

/// The OS keyring (crate `keyring`). Calls are serialised: rapid concurrent D-Bus calls can fail.
pub struct Keyring {
    lock: Mutex<()>,
}

impl Keyring {
    pub fn new() -> Self {
        Self {
            lock: Mutex::new(()),
        }
    }

    fn entry(&self, name: &str) -> Result<keyring::Entry, KeyError> {
        name_ok(name)?;
        keyring::Entry::new(SERVICE, name).map_err(map_err)
    }

    fn serial<T>(&self, f: impl FnOnce() -> Result<T, KeyError>) -> Result<T, KeyError> {
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        f()
    }
}

impl Default for Keyring {
    fn default() -> Self {
        Self::new()
    }
}

fn map_err(e: keyring::Error) -> KeyError {
    match e {
        keyring::Error::NoStorageAccess(p) => KeyError::Locked {
            detail: p.to_string(),
        },
        keyring::Error::NoDefaultStore => KeyError::Unavailable {
            detail: "no credential store on this system".into(),
        },
        other => KeyError::Unavailable {
            detail: crate::secrets::redact(&other.to_string()).into_owned(),
        },
    }
}

impl SecretStore for Keyring {
    fn probe(&self) -> Result<(), KeyError> {
        self.serial(|| {
            // Reading an entry nobody set reaches the store without changing it.
            match self.entry("reins-probe")?.get_password() {
                Ok(_) | Err(keyring::Error::NoEntry) => Ok(()),
                Err(e) => Err(map_err(e)),
            }
        })
    }

    fn set(&self, name: &str, key: &Secret) -> Result<(), KeyError> {
        check_value(key.expose())?;
        self.serial(|| {
            let entry = self.entry(name)?;
            entry.set_password(key.expose().trim()).map_err(map_err)?;
            // Read it back: a store that accepts and drops keys must not pass for working.
            match entry.get_password() {
                Ok(back) if back == key.expose().trim() => Ok(()),
                Ok(_) => Err(KeyError::Unavailable {
                    detail: "the keyring returned a different key than was stored".into(),
                }),
                Err(e) => Err(map_err(e)),
            }
        })
    }

    fn get(&self, name: &str) -> Result<Option<Secret>, KeyError> {
        self.serial(|| match self.entry(name)?.get_password() {
            Ok(k) => Ok(Some(Secret::new(k))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(map_err(e)),
        })
    }

    fn delete(&self, name: &str) -> Result<bool, KeyError> {
        self.serial(|| match self.entry(name)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(map_err(e)),
        })
    }
}

/// Keys in memory, for tests; `unavailable` makes every call fail like a missing keyring.
#[derive(Default)]
pub struct MemoryStore {
    keys: Mutex<BTreeMap<String, Secret>>,
    pub unavailable: bool,
}

impl MemoryStore {
    pub fn unavailable() -> Self {
        Self {
            unavailable: true,
            ..Self::default()
        }
    }

    fn up(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<String, Secret>>, KeyError> {
        if self.unavailable {
            return Err(KeyError::Unavailable {
                detail: "test store switched off".into(),
            });
        }
        Ok(self.keys.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl SecretStore for MemoryStore {
    fn probe(&self) -> Result<(), KeyError> {
        self.up().map(|_| ())
    }

    fn set(&self, name: &str, key: &Secret) -> Result<(), KeyError> {
        name_ok(name)?;
        check_value(key.expose())?;
        self.up()?
            .insert(name.to_owned(), Secret::new(key.expose().trim()));
        Ok(())
    }

    fn get(&self, name: &str) -> Result<Option<Secret>, KeyError> {
        name_ok(name)?;
        Ok(self.up()?.get(name).cloned())
    }

    fn delete(&self, name: &str) -> Result<bool, KeyError> {
        name_ok(name)?;
        Ok(self.up()?.remove(name).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints() {
        let s = Secret::new("sk-live-123");
        assert_eq!(format!("{s:?} {s}"), "[secret] [secret]");
    }

    #[test]
    fn names_and_values_are_checked() {
        assert!(check_name("openai").is_ok());
        assert!(check_name("my.server-2_x").is_ok());
        for bad in ["", "a b", "../x", "k\n", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_value("sk-abc").is_ok());
        for bad in ["", "  ", "two words", "a\tb"] {
            assert!(check_value(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_fake_stores_and_fails_like_the_real_one() -> Result<(), KeyError> {
        let store = MemoryStore::default();
        store.set("openai", &Secret::new(" sk-1 \n"))?;
        assert_eq!(
            store.get("openai")?.map(|s| s.expose().to_owned()),
            Some("sk-1".into())
        );
        assert!(store.delete("openai")?);
        assert!(!store.delete("openai")?);
        assert_eq!(store.get("openai")?, None);
        let off = MemoryStore::unavailable();
        assert!(matches!(off.probe(), Err(KeyError::Unavailable { .. })));
        assert!(off.set("openai", &Secret::new("k")).is_err());
        Ok(())
    }
}
