//! Secrets at rest (F11): what the harness must keep to run an action — a command's password, a
//! plan's token — is written to the database sealed, never in clear.
//!
//! Sealing finds secrets with the audit log's scanner ([`crate::secrets::find`]) and replaces each
//! one, in place, with a token `⟦sealed:…⟧` holding it encrypted (ChaCha20-Poly1305, a fresh nonce
//! each time) under a key kept in the OS keyring, never on disk. The rest of the text stays as it
//! was, so a sealed action is still the same JSON, readable without the key: [`shown`] puts
//! `[sealed secret]` where each token is. Only what runs or is handed back to the agent is opened.
//!
//! Text with no secret in it is stored as it is and never touches the keyring. When a secret is
//! found and the keyring cannot be reached, sealing fails with a message saying how to fix it: the
//! secret is not written anywhere else.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, LazyLock};

use base64::Engine as _;
use regex::Regex;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use tokio::sync::OnceCell;

use crate::keys::{KeyError, SecretStore};

/// The keyring entry holding the sealing key (one per OS user; base64 of 32 random bytes).
pub const KEY_NAME: &str = "reins.seal";

const OPEN: &str = "⟦sealed:";
const CLOSE: &str = "⟧";

/// What a person sees where a sealed secret is.
pub const SHOWN: &str = "[sealed secret]";

static TOKEN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"⟦sealed:([A-Za-z0-9_-]{20,})⟧").ok());

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum SealError {
    #[error("{what} holds a secret ({kind}), and Reins keeps secrets at rest only sealed with a key in the OS keyring; nothing was stored. Pass the secret through an environment variable instead of writing it out, or fix the keyring: {source}")]
    Keyring {
        what: String,
        kind: &'static str,
        source: KeyError,
    },
    #[error("{what} holds secrets sealed with a key in the OS keyring, and the keyring cannot be used to open them: {source}")]
    Unopened { what: String, source: KeyError },
    #[error("{what} holds secrets sealed with a key this keyring does not have (the entry {KEY_NAME:?} is missing: the data dir came from another machine or user, or the entry was deleted); it cannot run without them")]
    KeyMissing { what: String },
    #[error("{what} holds a sealed secret that does not open with this keyring's key (damaged, or sealed under another key)")]
    Damaged { what: String },
}

/// The sealing key, fetched (or made) once per process on first need.
pub struct Sealer {
    keys: Arc<dyn SecretStore>,
    key: OnceCell<Arc<LessSafeKey>>,
}

impl Sealer {
    pub fn new(keys: Arc<dyn SecretStore>) -> Self {
        Self {
            keys,
            key: OnceCell::new(),
        }
    }

    /// `text` with every secret in it sealed; borrowed when there is none. `what` names the text
    /// for an error ("the plan", "step 3's action").
    pub async fn seal<'t>(&self, text: &'t str, what: &str) -> Result<Cow<'t, str>, SealError> {
        let spans = spans(text);
        if spans.is_empty() {
            return Ok(Cow::Borrowed(text));
        }
        let kind = spans[0].1;
        let key = self
            .key(true)
            .await
            .map_err(|source| SealError::Keyring {
                what: what.to_owned(),
                kind,
                source,
            })?
            .ok_or_else(|| SealError::KeyMissing {
                what: what.to_owned(),
            })?;
        let mut out = String::with_capacity(text.len() + spans.len() * 48);
        let mut at = 0;
        for (range, _) in spans {
            out.push_str(&text[at..range.start]);
            out.push_str(&seal_one(&key, &text[range.clone()]).map_err(|()| {
                SealError::Damaged {
                    what: what.to_owned(),
                }
            })?);
            at = range.end;
        }
        out.push_str(&text[at..]);
        Ok(Cow::Owned(out))
    }

    /// `text` with its sealed secrets opened; borrowed when it has none.
    pub async fn open<'t>(&self, text: &'t str, what: &str) -> Result<Cow<'t, str>, SealError> {
        if !is_sealed(text) {
            return Ok(Cow::Borrowed(text));
        }
        let Some(re) = TOKEN.as_ref() else {
            return Err(SealError::Damaged {
                what: what.to_owned(),
            });
        };
        let key = self
            .key(false)
            .await
            .map_err(|source| SealError::Unopened {
                what: what.to_owned(),
                source,
            })?
            .ok_or_else(|| SealError::KeyMissing {
                what: what.to_owned(),
            })?;
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for caps in re.captures_iter(text) {
            let (Some(whole), Some(body)) = (caps.get(0), caps.get(1)) else {
                continue;
            };
            out.push_str(&text[at..whole.start()]);
            let plain = open_one(&key, body.as_str()).map_err(|()| SealError::Damaged {
                what: what.to_owned(),
            })?;
            out.push_str(&plain);
            at = whole.end();
        }
        out.push_str(&text[at..]);
        Ok(Cow::Owned(out))
    }

    /// The key; made and stored when `create` and none is stored yet.
    async fn key(&self, create: bool) -> Result<Option<Arc<LessSafeKey>>, KeyError> {
        if let Some(key) = self.key.get() {
            return Ok(Some(Arc::clone(key)));
        }
        let keys = Arc::clone(&self.keys);
        let stored = crate::keys::off_thread(move || {
            crate::keys::own_key(&*keys, KEY_NAME, create, "a sealing key")
        })
        .await?;
        let Some(bytes) = stored else {
            return Ok(None);
        };
        let key = UnboundKey::new(&CHACHA20_POLY1305, &bytes)
            .map_err(|_| KeyError::Invalid("the sealing key does not load".into()))?;
        let key = Arc::new(LessSafeKey::new(key));
        let _ = self.key.set(Arc::clone(&key));
        Ok(Some(self.key.get().map_or(key, Arc::clone)))
    }
}

/// Whether `text` holds a sealed secret.
pub fn is_sealed(text: &str) -> bool {
    text.contains(OPEN)
}

/// `text` as a person may see it without the key: each sealed secret as `[sealed secret]`.
pub fn shown(text: &str) -> Cow<'_, str> {
    match TOKEN.as_ref() {
        Some(re) if is_sealed(text) => re.replace_all(text, SHOWN),
        _ => Cow::Borrowed(text),
    }
}

fn seal_one(key: &LessSafeKey, plain: &str) -> Result<String, ()> {
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new().fill(&mut nonce).map_err(|_| ())?;
    let mut buf = plain.as_bytes().to_vec();
    key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut buf)
        .map_err(|_| ())?;
    let mut body = nonce.to_vec();
    body.extend_from_slice(&buf);
    Ok(format!("{OPEN}{}{CLOSE}", B64.encode(body)))
}

fn open_one(key: &LessSafeKey, body: &str) -> Result<String, ()> {
    let bytes = B64.decode(body).map_err(|_| ())?;
    if bytes.len() < NONCE_LEN {
        return Err(());
    }
    let (nonce, sealed) = bytes.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| ())?;
    let mut buf = sealed.to_vec();
    let plain = key
        .open_in_place(nonce, Aad::empty(), &mut buf)
        .map_err(|_| ())?;
    String::from_utf8(plain.to_vec()).map_err(|_| ())
}

/// The byte ranges to seal: each secret the scanner finds, less what is already sealed, cut
/// around quotes and escape sequences so a JSON or TOML string stays a valid string.
fn spans(text: &str) -> Vec<(Range<usize>, &'static str)> {
    let sealed: Vec<Range<usize>> = match TOKEN.as_ref() {
        Some(re) if is_sealed(text) => re.find_iter(text).map(|m| m.range()).collect(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for found in crate::secrets::find(text) {
        if sealed
            .iter()
            .any(|s| s.start < found.range.end && found.range.start < s.end)
        {
            continue;
        }
        let kind = found.kind.describe();
        let mut run = found.range.start;
        let mut chars = text[found.range.clone()].char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let at = found.range.start + i;
            if c == '"' || c == '\\' {
                if run < at {
                    out.push((run..at, kind));
                }
                let mut next = at + c.len_utf8();
                if c == '\\' {
                    // The escaped character (and a \u escape's four hex digits) stay as they are.
                    if let Some((j, e)) = chars.next() {
                        next = found.range.start + j + e.len_utf8();
                        if e == 'u' {
                            for _ in 0..4 {
                                if let Some((k, h)) = chars.next() {
                                    next = found.range.start + k + h.len_utf8();
                                }
                            }
                        }
                    }
                }
                run = next;
            }
        }
        if run < found.range.end {
            out.push((run..found.range.end, kind));
        }
    }
    out
}

#[cfg(test)]
mod tests;
