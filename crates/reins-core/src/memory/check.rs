//! What a fact must be before it is kept: a named category and key, a bounded value without
//! control characters, a confidence in [0, 1], and no secret in any field.

use super::{MemoryError, NewFact, Origin, Result, MAX_KEY, MAX_SOURCE, MAX_VALUE};

pub(super) fn check_name(what: &str, text: &str, max: usize) -> Result<()> {
    let ok = !text.is_empty()
        && text.len() <= max
        && text.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.')
        });
    if ok {
        Ok(())
    } else {
        Err(MemoryError::Invalid(format!(
            "{what} {text:?}: 1–{max} characters of a–z, 0–9, `_`, `-`, `.`"
        )))
    }
}

/// Refuses text that holds a secret, naming the field and what was found (never the text). Kept
/// for good, a fact is held to the strict scan: no random-looking token at all.
fn refuse_secrets(field: &'static str, text: &str) -> Result<()> {
    match crate::secrets::find_strict(text).first() {
        Some(f) => Err(MemoryError::Secret {
            field,
            what: f.kind.describe(),
        }),
        None => Ok(()),
    }
}

pub(super) fn check(new: &NewFact) -> Result<(String, f64)> {
    refuse_secrets("key", &new.key)?;
    refuse_secrets("value", &new.value)?;
    check_name("category", &new.category, 32)?;
    let key = new.key.trim().to_lowercase();
    check_name("key", &key, MAX_KEY)?;
    let value = new.value.trim();
    if value.is_empty() || value.chars().count() > MAX_VALUE {
        return Err(MemoryError::Invalid(format!(
            "value: 1–{MAX_VALUE} characters"
        )));
    }
    if value.chars().any(|c| c.is_control() && c != '\n') {
        return Err(MemoryError::Invalid("value: no control characters".into()));
    }
    let confidence = new.confidence.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&confidence) {
        return Err(MemoryError::Invalid(format!(
            "confidence {confidence}: between 0 and 1"
        )));
    }
    if let Origin::Agent {
        source: Some(source),
        ..
    } = &new.origin
    {
        if source.chars().count() > MAX_SOURCE {
            return Err(MemoryError::Invalid(format!(
                "source text: at most {MAX_SOURCE} characters"
            )));
        }
        refuse_secrets("source text", source)?;
    }
    Ok((key, confidence))
}
