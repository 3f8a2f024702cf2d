//! What makes a token a credential, and what makes a value not one: the context the scanner
//! reads around what it finds. A random-looking token is a secret with a secret-like name before it
//! or standing alone on its line, never as a public hash with its marker, in a data URL or inside a
//! public PEM block; a value is not a secret when it is code that fetches one, a name, or a
//! placeholder.

use std::ops::Range;

/// Names that make the random token after them on their line a credential.
const SECRET_WORDS: &[&str] = &[
    "key", "token", "secret", "passw", "pwd", "auth", "credential", "cookie", "session",
    "signature", "bearer", "private", "access",
];

/// Whether the random-looking token at `range` is held as a credential is: a secret-like name
/// before it on its line, or alone on its line. Never a public hash with its marker or the base64
/// of a data URL.
pub(super) fn credential_context(text: &str, range: &Range<usize>) -> bool {
    let token = &text[range.clone()];
    let line_start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[range.end..].find('\n').map_or(text.len(), |i| range.end + i);
    let before = &text[line_start..range.start];
    if public_hash(token) || HASH_MARKERS.iter().any(|m| before.ends_with(m)) {
        return false;
    }
    if public_block(&text[..range.start]) {
        return false;
    }
    // `NAME=value` read as one token: the name is the context.
    let body = token.trim_end_matches('=');
    if let Some((name, _)) = body.split_once('=') {
        let name = name.to_ascii_lowercase();
        return SECRET_WORDS.iter().any(|w| name.contains(w));
    }
    if before.rfind("data:").is_some_and(|at| {
        let since = &before[at..];
        since.contains(";base64,") && !since.contains(char::is_whitespace)
    }) {
        return false;
    }
    let after = &text[range.end..line_end];
    let alone = |s: &str| s.trim_matches(|c: char| c.is_whitespace() || "\"'`".contains(c)).is_empty();
    if alone(before) && alone(after) {
        return true;
    }
    // The name is the nearest words before the token: `MY_TOKEN=…`, `"apiKey": "…"`.
    let near: String = before
        .chars()
        .rev()
        .take(48)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<String>()
        .to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| near.contains(w)) && !near.contains("public")
}

/// Markers a public content hash follows (`h1:` in go.sum, `sha256:` in digests and pins).
const HASH_MARKERS: &[&str] = &["h1:", "sha1:", "sha256:", "sha384:", "sha512:", "md5:", "sha256="];

/// Whether the text before a token ends inside a PEM block that holds something public (a
/// certificate, a public key): its body lines are public.
fn public_block(before: &str) -> bool {
    let Some(begin) = before.rfind("-----BEGIN ") else {
        return false;
    };
    let opened = &before[begin..];
    let label = opened.lines().next().unwrap_or_default();
    !label.contains("PRIVATE") && !opened.contains("-----END ")
}

/// A content hash with its algorithm's marker (`sha512-…` in lockfiles and SRI attributes): public.
fn public_hash(token: &str) -> bool {
    ["sha1-", "sha256-", "sha384-", "sha512-", "md5-"]
        .iter()
        .any(|m| token.len() > m.len() && token[..m.len()].eq_ignore_ascii_case(m))
}

/// Words that stand for a password in an example rather than being one.
pub(super) const PLACEHOLDER_WORDS: &[&str] = &["pass", "password", "passwd", "pwd", "secret", "token", "key"];

/// A value that is code fetching the secret rather than the secret: a call (`getPassword()`,
/// `os.getenv("X")`) or a variable's reference (`$PASSWORD`, `${{ secrets.X }}`, `process.env.X`).
pub(super) fn is_code(value: &str) -> bool {
    let v = value.trim_matches(|c| c == '\'' || c == '"');
    // The value pattern stops at a quote: `os.getenv("X")` arrives as `os.getenv(`.
    let call = v.starts_with('(')
        || v.find('(').is_some_and(|open| {
            open > 0
                && v[..open]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        });
    let variable = v.strip_prefix('$').is_some_and(|name| {
        name.starts_with('{')
            || (!name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
    });
    // A member of an object: `config.apiKey`, `this.password`, `options.argv?.token`.
    let v = v.trim_end_matches([',', ';', ')', '}']);
    let member = v.contains('.')
        && v.starts_with(|c: char| c.is_ascii_lowercase() || c == '_' || c == '$')
        && v.replace("?.", ".").split('.').all(|part| {
            part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        });
    // A name rather than a value: `OPENAI_API_KEY`, `mistral_ai`, or a variable named for what it
    // holds (`appSecret`, `envKey`).
    let screaming = v.contains('_')
        && v.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    let snake = v.contains('_') && v.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    let lower = v.to_ascii_lowercase();
    let named = v.starts_with(|c: char| c.is_ascii_lowercase())
        && v.chars().all(|c| c.is_ascii_alphanumeric())
        && SECRET_WORDS.iter().any(|w| lower.contains(w));
    let keyword = screaming || snake || named || matches!(v, "undefined" | "null" | "None" | "nil" | "true" | "false" | "function");
    call || variable || member || keyword || v.starts_with("process.env") || v.starts_with("os.environ")
}

/// A value that stands for one the reader fills in: `sk-...`, `<your-key>`, `xxxxxxxx`, `****`.
pub(super) fn is_placeholder(value: &str) -> bool {
    let v = value.trim_matches(|c| c == '\'' || c == '"').to_ascii_lowercase();
    v.contains("...")
        || v.contains('…')
        || v.contains("****")
        || v.contains("xxxxxx")
        || v.starts_with('<')
        || v.starts_with("{{")
        || v.starts_with("your")
        || v.starts_with("changeme")
}

/// Made of words: runs of three or more lower-case letters cover most of it, as in identifiers
/// (`StandardJSONSchemaV1`, `interfaceAssignsIpv6Loopback`); random tokens switch case too often.
pub(super) fn wordy(token: &str) -> bool {
    let covered: usize = token
        .split(|c: char| !c.is_ascii_lowercase())
        .filter(|run| run.len() >= 3)
        .map(str::len)
        .sum();
    covered * 5 >= token.len() * 3
}
