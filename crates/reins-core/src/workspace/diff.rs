//! Exact previews of file changes as unified diffs, bounded: binary content is described by size and
//! full hash; a file too large to diff shows its head and both full hashes; the diff itself is capped.
//! Invisible, bidi and control characters are shown as visible markers, a line whose ending changes
//! (CRLF ↔ LF) shows `␍`, and a change of line endings across the file is called out.

use crate::digest::Digest;
use crate::text::reveal;

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
    let mut cut = false;
    let mut notes = String::new();
    let (o_crlf, n_crlf) = (o.matches("\r\n").count(), n.matches("\r\n").count());
    if (o_crlf > 0) != (n_crlf > 0) && old.is_some() && new.is_some() {
        notes.push_str(&format!(
            "note: line endings change ({} CRLF lines before, {} after); ␍ marks a carriage return\n",
            o_crlf, n_crlf
        ));
    }
    let body = match hunks(o, n) {
        Hunks::All(body) => body,
        Hunks::Cut(body) => {
            cut = true;
            body
        }
    };
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

enum Hunks {
    All(String),
    Cut(String),
}

/// The unified-diff hunks (3 lines of context) from `old` to `new`. Lines are interned to numbers
/// first, so the diff compares integers rather than strings.
fn hunks(old: &str, new: &str) -> Hunks {
    use similar::DiffTag;
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let mut ids: std::collections::HashMap<&str, u32> =
        std::collections::HashMap::with_capacity(a.len() + b.len());
    let mut ia = Vec::with_capacity(a.len());
    let mut ib = Vec::with_capacity(b.len());
    for (lines, out) in [(&a, &mut ia), (&b, &mut ib)] {
        for line in lines.iter() {
            let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
            out.push(*ids.entry(line).or_insert(next));
        }
    }
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &ia, &ib);
    let mut body = String::new();
    for group in similar::group_diff_ops(ops, 3) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (o0, o1) = (first.old_range().start, last.old_range().end);
        let (n0, n1) = (first.new_range().start, last.new_range().end);
        let range = |start: usize, end: usize| {
            let len = end - start;
            format!("{},{len}", if len == 0 { start } else { start + 1 })
        };
        let mut hunk = format!("@@ -{} +{} @@\n", range(o0, o1), range(n0, n1));
        for op in &group {
            let (tag, old_r, new_r) = op.as_tag_tuple();
            let (sign, lines) = match tag {
                DiffTag::Equal => (' ', &a[old_r]),
                DiffTag::Delete => ('-', &a[old_r]),
                DiffTag::Insert => ('+', &b[new_r]),
                DiffTag::Replace => {
                    for line in &a[old_r] {
                        push_line(&mut hunk, '-', line);
                    }
                    ('+', &b[new_r])
                }
            };
            for line in lines {
                push_line(&mut hunk, sign, line);
            }
        }
        if body.len() + hunk.len() > DIFF_OUTPUT_LIMIT {
            return Hunks::Cut(body);
        }
        body.push_str(&hunk);
    }
    Hunks::All(body)
}

fn push_line(out: &mut String, sign: char, line: &str) {
    out.push(sign);
    out.push_str(&visible_line(line));
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
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

    /// Applies a unified diff made by `unified` to `old` (visible markers aside).
    fn apply(old: &str, diff: &str) -> String {
        let old: Vec<&str> = old.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut at = 0;
        let mut lines = diff.lines().peekable();
        while let Some(l) = lines.next() {
            let Some(rest) = l.strip_prefix("@@ -") else {
                continue;
            };
            let start: usize = rest
                .split([',', ' '])
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or(0);
            let len: usize = rest
                .split([',', ' '])
                .nth(1)
                .and_then(|x| x.parse().ok())
                .unwrap_or(0);
            let start = if len == 0 { start } else { start - 1 };
            while at < start {
                out.push_str(old[at]);
                at += 1;
            }
            while let Some(h) = lines.peek() {
                if h.starts_with("@@") {
                    break;
                }
                let h = lines.next().unwrap_or_default();
                match h.chars().next() {
                    Some(' ') => {
                        out.push_str(old[at]);
                        at += 1;
                    }
                    Some('-') => at += 1,
                    Some('+') => {
                        out.push_str(&h[1..]);
                        out.push('\n');
                    }
                    Some('\\') => {
                        out.pop();
                    }
                    _ => {}
                }
            }
        }
        while at < old.len() {
            out.push_str(old[at]);
            at += 1;
        }
        out
    }

    #[test]
    fn the_diff_applies_back_to_the_new_content() {
        let mut state: u64 = 7;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..200 {
            let n = (next() % 60) as usize;
            let old: Vec<String> = (0..n).map(|i| format!("line {}\n", i % 7)).collect();
            let mut new = old.clone();
            for _ in 0..(next() % 6) {
                let i = (next() as usize) % (new.len() + 1);
                match next() % 3 {
                    0 => new.insert(i, format!("added {round}\n")),
                    1 if i < new.len() => {
                        new.remove(i);
                    }
                    _ if i < new.len() => new[i] = format!("changed {round}\n"),
                    _ => {}
                }
            }
            let (o, mut nw) = (old.concat(), new.concat());
            if round % 5 == 0 {
                nw.push_str("no newline");
            }
            let d = unified("f", Some(o.as_bytes()), Some(nw.as_bytes()));
            if o == nw {
                assert!(d.starts_with("(no change"), "{d}");
                continue;
            }
            assert_eq!(apply(&o, &d), nw, "round {round}\n{d}");
        }
    }
}
