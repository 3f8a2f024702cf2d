//! sed scripts, read the way sed reads them, to find what they do beyond printing: `e` and the
//! `e` flag of `s` run commands, `w`, `W` and the `w` flag write files. A script Reins cannot
//! follow is treated as doing anything.

/// What a script can do beyond reading its input and printing.
#[derive(Debug, PartialEq, Eq)]
pub enum Power {
    Prints,
    Writes(String),
    Runs(String),
    Unknown(String),
}

/// The scripts a sed command line gives (`-e S`, `--expression=S`, or the first operand) and
/// whether it reads one from a file (`-f`), which Reins cannot see.
pub fn scripts<'a>(lits: &[&'a str]) -> Result<Vec<&'a str>, String> {
    let mut out = Vec::new();
    let mut explicit = false;
    let mut i = 0;
    let mut operand = None;
    while i < lits.len() {
        let a = lits[i];
        match a {
            "-e" | "--expression" => {
                explicit = true;
                out.extend(lits.get(i + 1).copied());
                i += 1;
            }
            "-f" | "--file" => return Err("runs a sed script from a file Reins cannot see".into()),
            "--" => {
                operand = operand.or(lits.get(i + 1).copied());
                break;
            }
            _ if a.starts_with("--expression=") => {
                explicit = true;
                out.push(&a["--expression=".len()..]);
            }
            _ if a.starts_with("--file=") => {
                return Err("runs a sed script from a file Reins cannot see".into())
            }
            _ if a.starts_with("--") => {}
            _ if a.starts_with('-') && a.len() > 1 => {
                // A cluster such as `-ne` or `-nf`: the letter that takes a value ends it.
                let cluster = &a[1..];
                if let Some(at) = cluster.find(['e', 'f']) {
                    let value = &cluster[at + 1..];
                    if cluster.as_bytes()[at] == b'f' {
                        return Err("runs a sed script from a file Reins cannot see".into());
                    }
                    explicit = true;
                    if value.is_empty() {
                        out.extend(lits.get(i + 1).copied());
                        i += 1;
                    } else {
                        out.push(value);
                    }
                }
            }
            _ => operand = operand.or(Some(a)),
        }
        i += 1;
    }
    if !explicit {
        out.extend(operand);
    }
    Ok(out)
}

/// What `script` can do. Commands are separated by `;`, newlines and braces; each may have an
/// address (`1`, `$`, `/re/`, `\%re%`, ranges, steps, `!`).
pub fn power(script: &str) -> Power {
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut found = Power::Prints;
    while i < s.len() {
        let c = s[i];
        if c.is_whitespace() || matches!(c, ';' | '{' | '}') {
            i += 1;
            continue;
        }
        // The address, if any.
        i = match skip_address(&s, i) {
            Some(at) => at,
            None => return Power::Unknown("an address Reins cannot read".into()),
        };
        while i < s.len() && (s[i].is_whitespace() || s[i] == '!') {
            i += 1;
        }
        let Some(&cmd) = s.get(i) else { break };
        i += 1;
        match cmd {
            'e' => return Power::Runs("the sed command `e` runs a shell command".into()),
            'w' | 'W' => {
                found = Power::Writes("the sed command `w` writes a file".into());
                i = line_end(&s, i);
            }
            's' => {
                let Some(delim) = s.get(i).copied() else {
                    return Power::Unknown("an unfinished `s` command".into());
                };
                i += 1;
                for _ in 0..2 {
                    i = match skip_delimited(&s, i, delim) {
                        Some(at) => at,
                        None => return Power::Unknown("an unfinished `s` command".into()),
                    };
                }
                while i < s.len() && !matches!(s[i], ';' | '\n' | '}') {
                    match s[i] {
                        'e' => return Power::Runs("the `e` flag of `s` runs the result as a shell command".into()),
                        'w' => {
                            found = Power::Writes("the `w` flag of `s` writes a file".into());
                            i = line_end(&s, i);
                            break;
                        }
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | ' ' | '\t' => {}
                        d if d.is_ascii_digit() => {}
                        other => return Power::Unknown(format!("the `s` flag `{other}`")),
                    }
                    i += 1;
                }
            }
            'y' => {
                let Some(delim) = s.get(i).copied() else {
                    return Power::Unknown("an unfinished `y` command".into());
                };
                i += 1;
                for _ in 0..2 {
                    i = match skip_delimited(&s, i, delim) {
                        Some(at) => at,
                        None => return Power::Unknown("an unfinished `y` command".into()),
                    };
                }
            }
            // Text and file-reading commands take the rest of the line.
            'a' | 'i' | 'c' | 'r' | 'R' | 'b' | 't' | 'T' | ':' | 'q' | 'Q' | 'l' | 'L' => {
                i = line_end(&s, i)
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'z' | 'F' | '{' | '}' => {}
            '#' => i = line_end(&s, i),
            other => return Power::Unknown(format!("the sed command `{other}`")),
        }
    }
    found
}

fn line_end(s: &[char], mut i: usize) -> usize {
    while i < s.len() && s[i] != '\n' {
        i += 1;
    }
    i
}

/// Past the text up to an unescaped `delim`; None when it never comes.
fn skip_delimited(s: &[char], mut i: usize, delim: char) -> Option<usize> {
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            c if c == delim => return Some(i + 1),
            '\n' if delim != '\n' => return None,
            _ => i += 1,
        }
    }
    None
}

/// Past an address (`1`, `$`, `/re/`, `\cREc`, `first~step`, `a,b`, `a,+N`); the same index when
/// there is none; None when it does not end.
fn skip_address(s: &[char], mut i: usize) -> Option<usize> {
    for part in 0..2 {
        if part == 1 {
            if s.get(i) != Some(&',') {
                break;
            }
            i += 1;
        }
        match s.get(i) {
            Some('/') => i = skip_delimited(s, i + 1, '/')?,
            Some('\\') => {
                let delim = *s.get(i + 1)?;
                i = skip_delimited(s, i + 2, delim)?;
            }
            Some('$') => i += 1,
            Some(c) if c.is_ascii_digit() || *c == '+' || *c == '~' => {
                while i < s.len() && (s[i].is_ascii_digit() || matches!(s[i], '+' | '~')) {
                    i += 1;
                }
            }
            _ => {}
        }
        while matches!(s.get(i), Some('I' | 'M')) && part == 0 && i > 0 && s[i - 1] == '/' {
            i += 1;
        }
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_that_only_print() {
        for s in [
            "1,20p",
            "s/foo/bar/g",
            "/^#/d",
            "s/a/e/",
            "s|x|w|2",
            "$!N;P;D",
            "/start/,/end/{s/x/y/;p}",
            "y/abc/xyz/",
            "1~3p",
            "\\%usr%d",
            "a\\\nappended",
        ] {
            assert_eq!(power(s), Power::Prints, "{s}");
        }
    }

    #[test]
    fn scripts_that_run_or_write() {
        for (s, runs) in [
            ("1e touch /tmp/pwsed", true),
            ("e id", true),
            ("s/x/id/e", true),
            ("/x/ e id", true),
            ("s/x/y/w /tmp/out", false),
            ("1w /tmp/out", false),
            ("p;W out", false),
            ("{ e id\n}", true),
        ] {
            let p = power(s);
            assert!(
                matches!((&p, runs), (Power::Runs(_), true) | (Power::Writes(_), false)),
                "{s}: {p:?}"
            );
        }
        assert!(matches!(power("s/x"), Power::Unknown(_)));
        assert!(matches!(power("k"), Power::Unknown(_)));
    }

    #[test]
    fn where_the_script_is() {
        assert_eq!(scripts(&["-n", "1p", "README"]), Ok(vec!["1p"]));
        assert_eq!(scripts(&["-e", "1p", "-e", "2e id", "f"]), Ok(vec!["1p", "2e id"]));
        assert_eq!(scripts(&["-ne", "1e id", "f"]), Ok(vec!["1e id"]));
        assert_eq!(scripts(&["--expression=1p", "f"]), Ok(vec!["1p"]));
        assert!(scripts(&["-f", "x.sed", "f"]).is_err());
        assert!(scripts(&["-nf", "x.sed"]).is_err());
    }
}
