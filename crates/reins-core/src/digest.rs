//! SHA-256 digests, kept as lowercase hex so they read the same in the database, on disk and in JSON.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
#[cfg_attr(feature = "specta", derive(specta::Type), specta(transparent))]
pub struct Digest(String);

impl Digest {
    pub fn of(bytes: &[u8]) -> Self {
        Self(hex::encode(Sha256::digest(bytes)))
    }

    /// Accepts only 64 lowercase hex characters, so a digest read back from storage can name a file.
    pub fn parse(s: &str) -> Option<Self> {
        let ok = s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 hex characters, for people.
    pub fn short(&self) -> &str {
        &self.0[..12]
    }
}

/// JSON text with every object's keys in byte order, whatever order the value holds them in.
/// What is hashed must not depend on how serde_json was built: some dependencies turn on its
/// `preserve_order` feature, which keeps insertion order, so `Value::to_string` alone would hash
/// the same action differently in the desktop app and in the CLI.
pub fn canonical_json(value: &serde_json::Value) -> String {
    fn sorted(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                serde_json::Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(sorted).collect())
            }
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// Incremental SHA-256, for content read in pieces.
#[derive(Default)]
pub struct Hasher(Sha256);

impl Hasher {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> Digest {
        Digest(hex::encode(self.0.finalize()))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            Digest::of(b"abc").as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn parse_rejects_anything_that_could_not_be_a_file_name() {
        assert!(Digest::parse("../etc/passwd").is_none());
        assert!(
            Digest::parse(&"A".repeat(64)).is_none(),
            "uppercase is not canonical"
        );
        assert!(Digest::parse(Digest::of(b"x").as_str()).is_some());
    }
}

#[cfg(test)]
mod canonical_tests {
    #[test]
    fn keys_are_sorted_at_every_depth() {
        let mut inner = serde_json::Map::new();
        inner.insert("z".into(), 1.into());
        inner.insert("a".into(), serde_json::json!([{"y": 1, "b": 2}]));
        let mut outer = serde_json::Map::new();
        outer.insert("tool".into(), "x".into());
        outer.insert("args".into(), serde_json::Value::Object(inner));
        assert_eq!(
            super::canonical_json(&serde_json::Value::Object(outer)),
            r#"{"args":{"a":[{"b":2,"y":1}],"z":1},"tool":"x"}"#
        );
    }
}
