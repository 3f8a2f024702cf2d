//! Devices paired for remote approvals (`reins serve`): the one-time pairing code a person reads
//! off the terminal or the app, and the long random token the device exchanges it for. Both are
//! made from the OS's random source, and only their SHA-256 hashes are ever stored.

use ring::rand::{SecureRandom, SystemRandom};

use crate::digest::Digest;

/// A pairing code or token that cannot be made, or a device name that is refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DeviceError(String);

type Result<T> = std::result::Result<T, DeviceError>;

/// How long a pairing code works: 5 minutes, and once.
pub const PAIRING_TTL_MS: i64 = 5 * 60 * 1000;

/// Crockford's base32: no I, L, O or U, so a code read aloud or typed on a phone is not misread.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Characters in a pairing code (50 bits), shown in two groups of five.
const CODE_CHARS: usize = 10;

/// Every token starts with this, so a leaked one is recognisable (and greppable) as Reins'.
pub const TOKEN_PREFIX: &str = "reins_dev_";

fn random(bytes: &mut [u8]) -> Result<()> {
    SystemRandom::new()
        .fill(bytes)
        .map_err(|_| DeviceError("the OS random source failed".into()))
}

/// A fresh pairing code, like `7KQ2M-XD4PA`.
pub fn new_code() -> Result<String> {
    let mut raw = [0u8; CODE_CHARS];
    random(&mut raw)?;
    let mut code = String::with_capacity(CODE_CHARS + 1);
    for (i, b) in raw.iter().enumerate() {
        if i == CODE_CHARS / 2 {
            code.push('-');
        }
        code.push(ALPHABET[(*b & 31) as usize] as char);
    }
    Ok(code)
}

/// A code as typed (any case, spaces or dashes, the letters a person may mistake for digits)
/// in the form it was made in; None when it cannot be one.
pub fn normalize_code(typed: &str) -> Option<String> {
    let mut chars = String::with_capacity(CODE_CHARS + 1);
    for c in typed.chars() {
        let c = match c.to_ascii_uppercase() {
            ' ' | '-' => continue,
            'O' => '0',
            'I' | 'L' => '1',
            c => c,
        };
        if !ALPHABET.contains(&(c as u8)) || !c.is_ascii() {
            return None;
        }
        if chars.len() == CODE_CHARS / 2 {
            chars.push('-');
        }
        chars.push(c);
    }
    (chars.len() == CODE_CHARS + 1).then_some(chars)
}

/// A fresh device token: 32 random bytes, URL-safe.
pub fn new_token() -> Result<String> {
    use base64::Engine as _;
    let mut raw = [0u8; 32];
    random(&mut raw)?;
    Ok(format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    ))
}

/// What is stored for a code or a token.
pub fn hash(secret: &str) -> String {
    Digest::of(secret.as_bytes()).to_string()
}

/// A device's name as a person gives it: one line, 1 to 64 characters, no control characters.
pub fn check_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(DeviceError(
            "name the device (`--name \"my phone\"`), so its decisions can be told apart".into(),
        ));
    }
    if name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(DeviceError(
            "a device name is one line of at most 64 characters".into(),
        ));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_back_however_they_are_typed() -> Result<()> {
        let code = new_code()?;
        assert_eq!(code.len(), 11);
        assert_eq!(normalize_code(&code).as_deref(), Some(code.as_str()));
        assert_eq!(
            normalize_code(&code.to_lowercase().replace('-', " ")).as_deref(),
            Some(code.as_str())
        );
        assert_eq!(normalize_code("oi1l0-abcde").as_deref(), Some("01110-ABCDE"));
        assert_eq!(normalize_code("ABCD"), None, "too short");
        assert_eq!(normalize_code("ABCDE-FGHJKM"), None, "too long");
        assert_eq!(normalize_code("ABCDE-FGHJU"), None, "U is not in the alphabet");
        assert_eq!(normalize_code("ÄBCDE-FGHJK"), None);
        Ok(())
    }

    #[test]
    fn tokens_are_long_random_and_stored_as_hashes() -> Result<()> {
        let a = new_token()?;
        let b = new_token()?;
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == TOKEN_PREFIX.len() + 43);
        assert_eq!(hash(&a).len(), 64);
        assert!(!hash(&a).contains(&a[TOKEN_PREFIX.len()..]));
        Ok(())
    }

    #[test]
    fn names_are_one_short_line() -> Result<()> {
        assert_eq!(check_name("  my phone ")?, "my phone");
        assert!(check_name("").is_err());
        assert!(check_name("a\nb").is_err());
        assert!(check_name(&"x".repeat(65)).is_err());
        Ok(())
    }
}
