//! Exact previews of file changes as unified diffs.

use similar::TextDiff;

use crate::digest::Digest;

/// A unified diff from `old` to `new` (None = the file does not exist). Binary content is described
/// by size and hash instead of shown.
pub fn unified(path: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    let (from, to) = (
        if old.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_owned()
        },
        if new.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".to_owned()
        },
    );
    match (as_text(old), as_text(new)) {
        (Some(o), Some(n)) => {
            let diff = TextDiff::from_lines(o, n);
            let body = diff
                .unified_diff()
                .context_radius(3)
                .header(&from, &to)
                .to_string();
            if body.is_empty() {
                format!("(no change to {path})\n")
            } else {
                body
            }
        }
        _ => {
            let describe = |b: Option<&[u8]>| match b {
                Some(b) => format!("{} bytes, sha256 {}", b.len(), Digest::of(b).short()),
                None => "absent".to_owned(),
            };
            format!(
                "binary file {path}: {} -> {}\n",
                describe(old),
                describe(new)
            )
        }
    }
}

/// None when the bytes are not UTF-8; an absent file reads as empty text.
fn as_text(bytes: Option<&[u8]>) -> Option<&str> {
    match bytes {
        Some(b) => std::str::from_utf8(b).ok(),
        None => Some(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_exact_lines() {
        let d = unified("c.conf", Some(b"a\nb\n"), Some(b"a\nc\n"));
        assert!(d.contains("--- a/c.conf\n+++ b/c.conf\n"), "{d}");
        assert!(d.contains("-b\n+c\n"), "{d}");
        let created = unified("n.txt", None, Some(b"x\n"));
        assert!(
            created.contains("--- /dev/null") && created.contains("+x"),
            "{created}"
        );
        let bin = unified("b.bin", Some(&[0xff, 0xfe]), None);
        assert!(bin.starts_with("binary file b.bin: 2 bytes"), "{bin}");
    }
}
