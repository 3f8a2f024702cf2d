use std::sync::Arc;

use super::*;
use crate::keys::MemoryStore;

fn sealer() -> (Sealer, Arc<MemoryStore>) {
    let keys = Arc::new(MemoryStore::default());
    (Sealer::new(keys.clone()), keys)
}

const ACTION: &str = r#"{"args":{"command":"mysql -u root --password Tr0ub4dorCMD5 -h db app"},"tool":"shell.exec"}"#;

#[tokio::test]
async fn a_secret_is_sealed_in_place_and_opens_back_byte_for_byte() {
    let (s, keys) = sealer();
    let sealed = s.seal(ACTION, "the action").await.unwrap();
    assert!(!sealed.contains("Tr0ub4dorCMD5"), "{sealed}");
    assert!(is_sealed(&sealed));
    let v: serde_json::Value =
        serde_json::from_str(&sealed).unwrap_or_else(|e| panic!("still JSON: {e}: {sealed}"));
    assert!(v["args"]["command"]
        .as_str()
        .is_some_and(|c| c.starts_with("mysql -u root --password ⟦sealed:")));
    assert!(keys.get(KEY_NAME).ok().flatten().is_some(), "the key is in the keyring");
    let opened = s.open(&sealed, "the action").await.unwrap();
    assert_eq!(opened, ACTION);
    assert_eq!(
        shown(&sealed),
        r#"{"args":{"command":"mysql -u root --password [sealed secret] -h db app"},"tool":"shell.exec"}"#
    );
}

#[tokio::test]
async fn text_without_a_secret_is_kept_as_it_is_and_never_asks_the_keyring() {
    let keys = Arc::new(MemoryStore::unavailable());
    let s = Sealer::new(keys);
    let text = r#"{"args":{"command":"cargo test"},"tool":"shell.exec"}"#;
    assert!(matches!(s.seal(text, "x").await, Ok(Cow::Borrowed(_))));
    assert!(matches!(s.open(text, "x").await, Ok(Cow::Borrowed(_))));
}

#[tokio::test]
async fn without_a_keyring_a_secret_is_refused_not_stored_in_clear() {
    let s = Sealer::new(Arc::new(MemoryStore::unavailable()));
    let err = s.seal(ACTION, "the plan").await.err();
    let msg = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.starts_with("the plan holds a secret"), "{msg}");
    assert!(msg.contains("environment variable"), "{msg}");
}

#[tokio::test]
async fn another_key_or_a_missing_key_does_not_open_and_says_so() {
    let (s, _) = sealer();
    let sealed = s.seal(ACTION, "a").await.unwrap().into_owned();
    let (other, _) = sealer();
    let _ = other.seal(ACTION, "b").await;
    assert!(matches!(
        other.open(&sealed, "step 1's action").await,
        Err(SealError::Damaged { .. })
    ));
    let (fresh, _) = sealer();
    assert!(matches!(
        fresh.open(&sealed, "step 1's action").await,
        Err(SealError::KeyMissing { .. })
    ));
    let mut tampered = sealed.clone();
    let at = tampered.find(OPEN).unwrap_or(0) + OPEN.len() + 30;
    tampered.replace_range(at..at + 1, "A");
    if tampered != sealed {
        assert!(s.open(&tampered, "x").await.is_err(), "a changed byte is caught");
    }
}

#[tokio::test]
async fn escapes_inside_a_found_secret_stay_so_the_json_still_parses() {
    let (s, _) = sealer();
    let content = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\"q\\x\u{e9}\n-----END RSA PRIVATE KEY-----\n";
    let text = serde_json::json!({"args": {"content": content, "path": "k.pem"}, "tool": "fs.write"})
        .to_string();
    let sealed = s.seal(&text, "x").await.unwrap();
    assert!(!sealed.contains("MIIEowIBAAKCAQEA7"), "{sealed}");
    let back: serde_json::Value =
        serde_json::from_str(&sealed).unwrap_or_else(|e| panic!("{e}: {sealed}"));
    assert_eq!(back["args"]["path"], "k.pem");
    assert_eq!(s.open(&sealed, "x").await.unwrap(), text);
}

#[tokio::test]
async fn sealing_sealed_text_again_changes_nothing_that_opening_once_does_not_undo() {
    let (s, _) = sealer();
    let once = s.seal(ACTION, "x").await.unwrap().into_owned();
    let twice = s.seal(&once, "x").await.unwrap();
    assert_eq!(twice, once, "tokens are not sealed again");
}

#[tokio::test]
async fn opening_without_a_keyring_says_it_cannot_open_not_that_nothing_was_stored() {
    let (s, _) = sealer();
    let sealed = s.seal(ACTION, "a").await.unwrap().into_owned();
    let off = Sealer::new(Arc::new(MemoryStore::unavailable()));
    let msg = off
        .open(&sealed, "step 2's action")
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        msg.starts_with("step 2's action holds secrets sealed with a key in the OS keyring, and the keyring cannot be used"),
        "{msg}"
    );
}
