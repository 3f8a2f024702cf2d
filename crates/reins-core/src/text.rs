//! Characters a reviewer cannot see: bidi controls, zero-width characters and other controls. They
//! make a command or a diff read differently from what runs, so they raise risk and are rendered as
//! visible markers in every preview.

/// The name of a character a reviewer would not see, or None for an ordinary one.
pub fn invisible_name(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{061C}' => "ARABIC LETTER MARK",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{2060}' => "WORD JOINER",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE",
        '\u{00AD}' => "SOFT HYPHEN",
        '\u{180E}' => "MONGOLIAN VOWEL SEPARATOR",
        '\u{2061}'..='\u{2064}' => "INVISIBLE OPERATOR",
        '\u{E0000}'..='\u{E007F}' => "TAG CHARACTER",
        '\t' | '\n' => return None,
        '\r' => "CARRIAGE RETURN",
        c if c.is_control() => "CONTROL CHARACTER",
        _ => return None,
    })
}

/// The distinct invisible characters in `text`, as "U+202E RIGHT-TO-LEFT OVERRIDE", at most 5.
pub fn invisible_in(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for c in text.chars() {
        if let Some(name) = invisible_name(c) {
            let label = format!("U+{:04X} {name}", c as u32);
            if !found.contains(&label) {
                found.push(label);
                if found.len() == 5 {
                    break;
                }
            }
        }
    }
    found
}

/// A reason for a text holding invisible characters, or None. A lone `\r` before `\n` (CRLF line
/// endings) is ordinary and not reported.
pub fn invisible_reason(what: &str, text: &str) -> Option<String> {
    let found: Vec<String> = invisible_in(&text.replace("\r\n", "\n"));
    (!found.is_empty()).then(|| {
        format!(
            "{what} contains characters a reviewer cannot see ({}): what you read may not be what runs",
            found.join(", ")
        )
    })
}

/// `text` with every invisible character replaced by a visible marker such as `⟨U+202E⟩`.
pub fn reveal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match invisible_name(c) {
            Some(_) => out.push_str(&format!("⟨U+{:04X}⟩", c as u32)),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_reveals_bidi_and_zero_width() {
        let text = "echo \u{202E}txt.exe\u{200B}";
        assert_eq!(
            invisible_in(text),
            vec!["U+202E RIGHT-TO-LEFT OVERRIDE", "U+200B ZERO WIDTH SPACE"]
        );
        assert_eq!(reveal(text), "echo ⟨U+202E⟩txt.exe⟨U+200B⟩");
        assert!(invisible_reason("the command", "ls -la\n").is_none());
        assert!(invisible_reason("the file", "a\r\nb\r\n").is_none());
        assert!(invisible_reason("the file", "a\rb").is_some());
    }
}
