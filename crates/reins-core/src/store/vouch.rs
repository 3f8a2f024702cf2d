//! Vouching for the audit log (N13). The chain shows that no event was changed, removed or moved,
//! but anyone who can write the database can append a correctly chained event: the hash needs no
//! secret. So each event also carries a MAC, HMAC-SHA256 of its hash under a key kept in the OS
//! keyring (`reins.audit`, one per OS user, never on disk), written as `<key id>:<hex>`.
//!
//! The key is loaded once per process, on the first append, and made when the keyring has none.
//! Where no keyring can be reached events are appended without a MAC, as before; verification
//! says so. Once a database has keyed events, the keyring also keeps a marker for it (`since`:
//! the first keyed seq and the log's first hash), so stripping every MAC does not make a keyed
//! log read as one that never was.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use ring::hmac;

use crate::keys::{KeyError, Secret, SecretStore};

/// The keyring entry holding the audit key (base64 of 32 random bytes).
pub const KEY_NAME: &str = "reins.audit";

/// The key that vouches for events: what a MAC is made and checked with.
pub struct AuditKey {
    key: hmac::Key,
    id: String,
}

/// What one event's MAC says, checked against this machine's key.
#[derive(Debug, PartialEq, Eq)]
pub enum Check<'m> {
    /// Made with this key, over this hash.
    Holds,
    /// Names this key but does not hold: made without it, or for another event.
    Forged,
    /// Made with another key (another machine's, or another OS user's), named by its id.
    Other(&'m str),
}

impl AuditKey {
    pub(crate) fn of(bytes: &[u8]) -> Self {
        use sha2::Digest as _;
        let mut h = sha2::Sha256::new();
        h.update(b"reins audit key id\0");
        h.update(bytes);
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, bytes),
            id: hex::encode(&h.finalize()[..8]),
        }
    }

    /// The key's id: a MAC names the key it was made with, so each machine can tell its own.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The MAC of the event whose chain hash is `hash`.
    pub fn mac(&self, hash: &str) -> String {
        let tag = hmac::sign(&self.key, hash.as_bytes());
        format!("{}:{}", self.id, hex::encode(tag.as_ref()))
    }

    /// Whether `mac` is this key's over `hash`.
    pub fn check<'m>(&self, hash: &str, mac: &'m str) -> Check<'m> {
        let (id, tag) = mac.split_once(':').unwrap_or(("", mac));
        if id != self.id {
            return Check::Other(id);
        }
        match hex::decode(tag) {
            Ok(tag) if hmac::verify(&self.key, hash.as_bytes(), &tag).is_ok() => Check::Holds,
            _ => Check::Forged,
        }
    }
}

/// Where a keyed log started, as the keyring remembers it for one database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Since {
    pub seq: i64,
    /// The hash of the log's first event: a database made again at the same place is another log.
    pub first_hash: String,
}

/// What verification learns from the keyring.
pub struct ForVerify {
    pub key: Option<Arc<AuditKey>>,
    pub since: Option<Since>,
    /// Why the key could not be read (then no MAC is checked).
    pub unavailable: Option<KeyError>,
}

/// The audit key of one store, loaded on first need.
pub struct Vouch {
    keys: Mutex<Option<Arc<dyn SecretStore>>>,
    /// None until tried; then the key, or None when the keyring could not give one.
    loaded: RwLock<Option<Option<Arc<AuditKey>>>>,
    loading: tokio::sync::Mutex<()>,
    /// The keyring entry that remembers where this database's keyed log starts.
    marker: String,
    marked: AtomicBool,
}

impl std::fmt::Debug for Vouch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vouch")
            .field("marker", &self.marker)
            .finish_non_exhaustive()
    }
}

impl Vouch {
    /// For the database named `identity` (its file, or the shared database's URL without password).
    pub fn new(identity: &str) -> Self {
        let digest = crate::digest::Digest::of(identity.as_bytes()).to_string();
        Self {
            keys: Mutex::new(None),
            loaded: RwLock::new(None),
            loading: tokio::sync::Mutex::new(()),
            marker: format!("{KEY_NAME}.since.{}", &digest[..16]),
            marked: AtomicBool::new(false),
        }
    }

    /// Takes the key from `keys` from now on (the engine's keyring; a fake in tests).
    pub fn use_keys(&self, keys: Arc<dyn SecretStore>) {
        if let Ok(mut k) = self.keys.lock() {
            *k = Some(keys);
        }
        if let Ok(mut l) = self.loaded.write() {
            *l = None;
        }
        self.marked.store(false, Ordering::Relaxed);
    }

    fn keys(&self) -> Option<Arc<dyn SecretStore>> {
        self.keys.lock().ok().and_then(|k| k.clone())
    }

    /// The key to append with: loaded (or made) once; None when the keyring cannot be reached,
    /// and then for the rest of the process (each append must not wait on a dead keyring).
    pub async fn key(&self) -> Option<Arc<AuditKey>> {
        if let Some(loaded) = self.loaded.read().ok().and_then(|l| l.clone()) {
            return loaded;
        }
        let _one = self.loading.lock().await;
        if let Some(loaded) = self.loaded.read().ok().and_then(|l| l.clone()) {
            return loaded;
        }
        let key = match self.keys() {
            None => None,
            Some(keys) => {
                let marker = self.marker.clone();
                let got = crate::keys::off_thread(move || {
                    let key = load(&*keys, true)?;
                    Ok((key, keys.get(&marker)?.is_some()))
                })
                .await;
                match got {
                    Ok((key, marked)) => {
                        self.marked.store(marked, Ordering::Relaxed);
                        key.map(Arc::new)
                    }
                    Err(_) => None,
                }
            }
        };
        if let Ok(mut l) = self.loaded.write() {
            *l = Some(key.clone());
        }
        key
    }

    /// Whether the keyring already remembers where this database's keyed log starts.
    pub(super) fn marked(&self) -> bool {
        self.marked.load(Ordering::Relaxed)
    }

    /// Remembers, once, that this database's log is keyed from `seq` (its first event's hash
    /// `first_hash`). Best effort: without it a log stripped of every MAC reads as never keyed.
    pub(super) async fn mark(&self, seq: i64, first_hash: String) {
        let Some(keys) = self.keys() else { return };
        if self.marked.swap(true, Ordering::Relaxed) {
            return;
        }
        let marker = self.marker.clone();
        // Never replaced: a marker naming another first event makes verification stricter
        // (every event must then be keyed), never looser.
        let _ = crate::keys::off_thread(move || {
            if keys.get(&marker)?.is_some() {
                return Ok(());
            }
            keys.set(&marker, &Secret::new(format!("{seq}:{first_hash}")))
        })
        .await;
    }

    /// The key (never made here) and the marker, for verification.
    pub async fn for_verify(&self) -> ForVerify {
        let Some(keys) = self.keys() else {
            return ForVerify {
                key: None,
                since: None,
                unavailable: Some(KeyError::Unavailable {
                    detail: "no keyring was given to this store".into(),
                }),
            };
        };
        let marker = self.marker.clone();
        let got = crate::keys::off_thread(move || {
            let key = load(&*keys, false)?;
            let since = keys.get(&marker)?.and_then(|s| parse_since(s.expose()));
            Ok((key, since))
        })
        .await;
        match got {
            Ok((key, since)) => ForVerify {
                key: key.map(Arc::new),
                since,
                unavailable: None,
            },
            Err(e) => ForVerify {
                key: None,
                since: None,
                unavailable: Some(e),
            },
        }
    }
}

/// `seq:first_hash`, as `mark` writes it.
fn parse_since(text: &str) -> Option<Since> {
    let (seq, hash) = text.trim().split_once(':')?;
    Some(Since {
        seq: seq.parse().ok()?,
        first_hash: hash.to_owned(),
    })
}

/// The stored key; made and stored when `create` and there is none.
fn load(keys: &dyn SecretStore, create: bool) -> Result<Option<AuditKey>, KeyError> {
    Ok(crate::keys::own_key(keys, KEY_NAME, create, "an audit key")?.map(|b| AuditKey::of(&b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::MemoryStore;

    #[test]
    fn a_mac_holds_for_its_own_hash_under_its_own_key_only() {
        let key = AuditKey::of(&[7; 32]);
        let other = AuditKey::of(&[8; 32]);
        let mac = key.mac("abc");
        assert_eq!(key.check("abc", &mac), Check::Holds);
        assert_eq!(key.check("abd", &mac), Check::Forged, "another event's MAC");
        assert_eq!(key.check("abc", &format!("{}:00", key.id())), Check::Forged);
        assert_eq!(key.check("abc", "garbage"), Check::Other(""));
        assert_eq!(other.check("abc", &mac), Check::Other(key.id()));
        assert_ne!(key.id(), other.id());
    }

    #[tokio::test]
    async fn the_key_is_made_once_and_found_again_and_absent_without_a_keyring() {
        let keys: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
        let a = Vouch::new("/a/reins.db");
        assert!(a.key().await.is_none(), "no keyring given: no key");
        a.use_keys(Arc::clone(&keys));
        let made = a.key().await.map(|k| k.id().to_owned());
        assert!(made.is_some());
        let b = Vouch::new("/b/reins.db");
        b.use_keys(Arc::clone(&keys));
        assert_eq!(b.key().await.map(|k| k.id().to_owned()), made, "one key per keyring");
        assert_eq!(
            b.for_verify().await.key.map(|k| k.id().to_owned()),
            made
        );

        // The marker is per database, and names the log it was made for.
        assert!(!b.marked());
        b.mark(5, "h1".into()).await;
        assert_eq!(
            b.for_verify().await.since,
            Some(Since {
                seq: 5,
                first_hash: "h1".into()
            })
        );
        assert_eq!(a.for_verify().await.since, None);

        let off = Vouch::new("/c/reins.db");
        off.use_keys(Arc::new(MemoryStore::unavailable()));
        assert!(off.key().await.is_none());
        assert!(off.for_verify().await.unavailable.is_some());
    }
}
