//! Exact previews of file changes as unified diffs, bounded: binary content is described by size and
//! full hash; a file too large to diff shows its head and both full hashes; the diff itself is capped.
//! Invisible, bidi and control characters are shown as visible markers, a line whose ending changes
//! (CRLF ↔ LF) shows `␍`, and a change of line endings across the file is called out.

use similar::TextDiff;

use crate::digest::Digest;
use crate::policy::text::reveal;

/// Files larger than this (either side) are not line-diffed.
pub const DIFF_INPUT_LIMIT: usize = 4 * 1024 * 1024;
/// The diff text is cut here.
pub const DIFF_OUTPUT_LIMIT: usize = 512 * 1024;
/// Lines of a too-large file shown instead of a diff.
const HEAD_LINES: usize = 200;

/// A unified diff from `old` to `new` (None = the file does not exist).
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
    let describe = |b: Option<&[u8]>| match b {
        Some(b) => format!("{} bytes, sha256 {}", b.len(), Digest::of(b)),
        None => "absent".to_owned(),
    };
    let (o, n) = match (as_text(old), as_text(new)) {
        (Some(o), Some(n)) => (o, n),
        _ => {
            return format!(
                "binary file {path}: {} -> {}\n",
                describe(old),
                describe(new)
            )
        }
    };
    if o.len() > DIFF_INPUT_LIMIT || n.len() > DIFF_INPUT_LIMIT {
        let mut s = format!(
            "large file {path}: {} -> {}\n(too large to diff line by line; the first {HEAD_LINES} lines of the new content follow)\n",
            describe(old),
            describe(new)
        );
        for line in n.split_inclusive('\n').take(HEAD_LINES) {
            s.push('+');
            s.push_str(&visible_line(line));
        }
        return s;
    }
    let mut notes = String::new();
    let (o_crlf, n_crlf) = (o.matches("\r\n").count(), n.matches("\r\n").count());
    if (o_crlf > 0) != (n_crlf > 0) && old.is_some() && new.is_some() {
        notes.push_str(&format!(
            "note: line endings change ({} CRLF lines before, {} after); ␍ marks a carriage return\n",
            o_crlf, n_crlf
        ));
    }
    let diff = TextDiff::from_lines(o, n);
    let mut body = String::new();
    let mut cut = false;
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        let text = hunk.to_string();
        if body.len() + text.len() > DIFF_OUTPUT_LIMIT {
            cut = true;
            break;
        }
        for line in text.split_inclusive('\n') {
            body.push_str(&visible_line(line));
        }
    }
    if body.is_empty() {
        return format!("(no change to {path})\n");
    }
    let mut s = format!("{notes}--- {from}\n+++ {to}\n{body}");
    if cut {
        s.push_str(&format!(
            "… diff cut at {DIFF_OUTPUT_LIMIT} bytes; new content: {}\n",
            describe(new)
        ));
    }
    s
}

/// A line with hidden characters revealed; a carriage return before the newline shows as `␍`.
fn visible_line(line: &str) -> String {
    let (body, end) = match line.strip_suffix("\r\n") {
        Some(b) => (b, "␍\n"),
        None => match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        },
    };
    format!("{}{end}", reveal(body))
}

/// None when the bytes are not text (not UTF-8, or holding NUL bytes); an absent file reads as empty.
fn as_text(bytes: Option<&[u8]>) -> Option<&str> {
    match bytes {
        Some(b) if b.contains(&0) => None,
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
        assert!(
            bin.starts_with("binary file b.bin: 2 bytes, sha256 "),
            "{bin}"
        );
        assert!(bin.len() > 64, "the full hash: {bin}");
    }

    #[test]
    fn hidden_characters_and_line_endings_are_visible() {
        let d = unified(
            "a.txt",
            Some(b"x\r\ny\r\n"),
            Some("x\ny\u{202e}\n".as_bytes()),
        );
        assert!(d.contains("line endings change"), "{d}");
        assert!(d.contains("-x␍\n"), "{d}");
        assert!(d.contains("+y⟨U+202E⟩\n"), "{d}");
    }

    #[test]
    fn a_huge_file_is_summarised_not_diffed() {
        let big = "line\n".repeat(1_000_000);
        let d = unified("big.txt", Some(big.as_bytes()), Some(b"small\n"));
        assert!(
            d.starts_with("large file big.txt: 5000000 bytes, sha256 "),
            "{}",
            &d[..200]
        );
        assert!(d.len() < 10_000, "bounded: {} bytes", d.len());
    }
}
