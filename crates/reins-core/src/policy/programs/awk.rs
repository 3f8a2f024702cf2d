//! awk programs, read well enough to tell printing from running. What takes an awk program beyond
//! reading its input and printing: `system()`, a pipe into or out of a command (`print | "cmd"`,
//! `"cmd" | getline`, `|&`), `print > file` and `>>`, `getline < file`, and gawk's `@load`,
//! `@include` and indirect calls (`@f()`, which can name `system`). The program text is scanned
//! with its strings, regular expressions and comments skipped, so a `|` in `/a|b/` or `"x|y"` is not
//! a pipe. A program Reins cannot see (`-f FILE`) or an option it does not know is treated as doing
//! anything.

use crate::policy::Risk;

/// What an awk command line does beyond printing, with the reason; None when it only reads and
/// prints.
pub(super) fn finding(program: &str, lits: &[&str], args: &[Option<String>]) -> Option<(Risk, String)> {
    let code = match source(lits, args) {
        Ok(code) => code,
        Err(why) => return Some((Risk::High, format!("`{program}` {why}"))),
    };
    power(code).map(|why| (Risk::High, format!("the `{program}` program {why}")))
}

/// The program text from the command line, or why it cannot be seen.
fn source<'a>(lits: &[&'a str], args: &[Option<String>]) -> Result<&'a str, String> {
    let mut i = 0;
    while i < lits.len() {
        let a = lits[i];
        if args.get(i).is_some_and(Option::is_none) {
            return Err("is given an argument only known at run time; its program could be anything".into());
        }
        match a {
            "--" => {
                i += 1;
                break;
            }
            "-F" | "-v" | "--field-separator" | "--assign" => i += 2,
            "-f" | "--file" | "-i" | "--include" | "-l" | "--load" | "-E" | "--exec" => {
                return Err("runs a program from a file or library Reins cannot see".into())
            }
            _ if a.starts_with("--file=")
                || a.starts_with("--include=")
                || a.starts_with("--load=")
                || a.starts_with("--exec=") =>
            {
                return Err("runs a program from a file or library Reins cannot see".into())
            }
            _ if a.starts_with("--field-separator=") || a.starts_with("--assign=") => i += 1,
            _ if a.starts_with("-F") || a.starts_with("-v") => i += 1,
            // Plain switches that change how the program is read, not what it can do.
            "--posix" | "--traditional" | "-c" | "--re-interval" | "-r" | "--characters-as-bytes"
            | "-b" | "--sandbox" | "-S" | "--lint" | "-L" | "-n" | "--non-decimal-data"
            | "--version" | "-V" | "--help" | "-h" | "-W" => i += 1,
            _ if a.starts_with('-') && a.len() > 1 => {
                return Err(format!(
                    "is given the option {a}, which Reins does not know (gawk can dump, profile or debug to files)"
                ))
            }
            _ => break,
        }
    }
    if i >= lits.len() {
        return if lits.iter().any(|a| matches!(*a, "--version" | "-V" | "--help" | "-h")) {
            Ok("")
        } else {
            Err("is given no program".into())
        };
    }
    if args.get(i).is_some_and(Option::is_none) {
        return Err("is given a program only known at run time".into());
    }
    Ok(lits[i])
}

/// What the program can do beyond printing, or None.
pub(super) fn power(code: &str) -> Option<String> {
    let s: Vec<char> = code.chars().collect();
    let mut i = 0;
    // The last significant character outside strings and regexes: decides whether `/` divides.
    let mut prev: char = ';';
    let mut word = String::new();
    // Inside a `print` or `printf` statement, with the bracket depth at its start.
    let mut printing: Option<usize> = None;
    let mut depth = 0usize;
    while i < s.len() {
        let c = s[i];
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            i += 1;
            prev = c;
            continue;
        }
        if !word.is_empty() {
            match word.as_str() {
                "system" => return Some("calls system(), which runs a shell command".into()),
                "print" | "printf" => printing = Some(depth),
                _ => {}
            }
            word.clear();
        }
        match c {
            '"' => {
                i = skip_string(&s, i);
                prev = '"';
                continue;
            }
            '#' => {
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if !operand_ended(prev) => {
                i = skip_regex(&s, i);
                prev = '/';
                continue;
            }
            '\\' if s.get(i + 1) == Some(&'\n') => {
                i += 2;
                continue;
            }
            '|' if s.get(i + 1) == Some(&'|') => {
                i += 2;
                prev = '|';
                continue;
            }
            '|' => return Some("pipes into or out of a command (`|`), which runs it".into()),
            '@' => {
                return Some(
                    "uses gawk's `@` (a library, an include or an indirect call, which can name system)"
                        .into(),
                )
            }
            '>' if printing == Some(depth) => {
                let target = rest_word(&s, i + 1);
                if !matches!(target.as_str(), "\"/dev/stdout\"" | "\"/dev/stderr\"") {
                    return Some(format!(
                        "writes to a file it names (`> {target}`): Reins does not judge paths inside programs"
                    ));
                }
            }
            '<' if word_before(&s, i) == "getline" => {
                return Some(
                    "reads a file it names (`getline <`): Reins does not judge paths inside programs"
                        .into(),
                )
            }
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ';' | '\n' | '{' | '}' => printing = None,
            _ => {}
        }
        if !c.is_whitespace() {
            prev = c;
        }
        i += 1;
    }
    if word == "system" {
        return Some("calls system(), which runs a shell command".into());
    }
    None
}

/// Whether the character before a `/` ends an operand, so the `/` divides.
fn operand_ended(prev: char) -> bool {
    prev.is_alphanumeric() || matches!(prev, '_' | ')' | ']' | '$' | '"' | '.')
}

fn skip_string(s: &[char], start: usize) -> usize {
    let mut i = start + 1;
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

fn skip_regex(s: &[char], start: usize) -> usize {
    let mut i = start + 1;
    let mut bracket = false;
    while i < s.len() {
        match s[i] {
            '\\' => i += 2,
            '[' => {
                bracket = true;
                i += 1;
            }
            ']' => {
                bracket = false;
                i += 1;
            }
            '/' if !bracket => return i + 1,
            '\n' => return i,
            _ => i += 1,
        }
    }
    i
}

/// The word after a redirection, for the reason.
fn rest_word(s: &[char], from: usize) -> String {
    let text: String = s[from..].iter().collect();
    let text = text.trim_start_matches(['>', ' ', '\t']);
    let end = match text.strip_prefix('"') {
        Some(quoted) => quoted.find('"').map(|e| e + 2).unwrap_or(text.len()),
        None => text.find([';', '}', '\n', ' ']).unwrap_or(text.len()),
    };
    text[..end].to_owned()
}

/// The identifier just before position `at`, skipping spaces (`getline <`, `getline line <`).
fn word_before(s: &[char], at: usize) -> String {
    let before: String = s[..at].iter().collect();
    let words: Vec<&str> = before
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| !w.is_empty())
        .collect();
    match words.as_slice() {
        [.., "getline", _var] if !before.trim_end().ends_with("getline") => "getline".into(),
        [.., last] => (*last).into(),
        [] => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::power;

    #[test]
    fn printing_is_not_running() {
        for p in [
            "{print $1}",
            "NR > 1 {sum += $2} END {print sum}",
            "length > 80",
            "/a|b/ {print}",
            r#"{ gsub(/x|y/, "|"); print }"#,
            r#"{printf "%-10s %s\n", $1, $2}"#,
            "$1 > 5 { print $2 }",
            "{ print (a > b) }",
            "{ x = a / b; y = c / d; print x }",
            "NR==FNR {seen[$1]=1; next} !seen[$1]",
            "a || b { print }",
            r#"{ print > "/dev/stderr" }"#,
            "# a comment with system() | in it\n{ print }",
            "{ while ((getline line) > 0) n++ } END { print n }",
        ] {
            assert_eq!(power(p), None, "{p}");
        }
    }

    #[test]
    fn running_and_writing_are_found() {
        for (p, why) in [
            (r#"BEGIN { system("id") }"#, "system"),
            (r#"{ print | "sh" }"#, "pipes"),
            (r#"BEGIN { "id" | getline x; print x }"#, "pipes"),
            (r#"BEGIN { "sh" |& getline }"#, "pipes"),
            (r#"{ print > "out.txt" }"#, "writes"),
            (r#"{ print $0 >> "/etc/passwd" }"#, "writes"),
            (r#"{ printf("%s", $1) > ".git/hooks/x" }"#, "writes"),
            (r#"BEGIN { while ((getline l < "/root/.ssh/id_rsa") > 0) print l }"#, "reads a file"),
            (r#"BEGIN { getline < "/etc/shadow" }"#, "reads a file"),
            (r#"@load "filefuncs""#, "@"),
            (r#"BEGIN { f = "system"; @f("id") }"#, "@"),
            ("BEGIN{system(\"id\")}", "system"),
            ("BEGIN { x = system\n(\"id\") }", "system"),
        ] {
            let got = power(p);
            assert!(
                got.as_deref().is_some_and(|g| g.contains(why)),
                "{p}: {got:?}"
            );
        }
    }
}
