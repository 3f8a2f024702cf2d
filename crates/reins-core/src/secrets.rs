//! Finding secrets in text, so they can be kept out of the audit log (and, later, out of memory).
//!
//! What counts: API keys in the formats of common providers, bearer/basic credentials, JWTs,
//! private key blocks, passwords in URLs, `password = …`-style assignments, base64 or hex text that
//! decodes to any of those, and long high-entropy tokens. A found secret is replaced by
//! `[redacted sha256:<first 12 hex of its SHA-256>]`: the same secret always reads the same, so two
//! events can be seen to share one, without the log holding anything that gives it back.
//!
//! Conservative where a secret has a shape or a context, precise where it has neither: a false
//! alarm hides content from the person and, without a keyring, suspends a run. So a long random
//! token is a secret only with what makes it a credential: a secret-like name before it on its line
//! (`MY_SERVICE_TOKEN=…`, `X-Api-Key: …`), or standing alone on its line as a printed value does.
//! Public content hashes with their marker (`sha512-…` integrity fields, SRI attributes), the
//! base64 of data URLs, and code or placeholders where a value would be (`password =
//! entry.getPassword()`, `API_KEY=sk-...`) are not secrets. Hex strings are caught only when they
//! decode to one of the formats above: the log is full of digests and ids.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use base64::Engine as _;
use regex::Regex;

use crate::digest::Digest;

/// What a finding looks like, for the reason a person is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretKind {
    PrivateKey,
    Jwt,
    ProviderKey,
    Credential,
    UrlPassword,
    Assignment,
    Password,
    Encoded,
    HighEntropy,
}

impl SecretKind {
    pub fn describe(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "a private key block",
            SecretKind::Jwt => "a JSON Web Token",
            SecretKind::ProviderKey => "an API key in a known provider's format",
            SecretKind::Credential => "a bearer or basic credential",
            SecretKind::UrlPassword => "a password in a URL",
            SecretKind::Assignment => "a value assigned to a password, secret, token or key",
            SecretKind::Password => "a password given on a command line or written in prose",
            SecretKind::Encoded => "base64 or hex text that decodes to a secret",
            SecretKind::HighEntropy => "a long random-looking token",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub kind: SecretKind,
    /// Byte range of the secret itself (for a URL password or an assignment, only the value).
    pub range: Range<usize>,
}

/// Each alternative names the group holding the secret; the group name says its kind.
static PATTERNS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let alternatives = [
        r"(?P<pk>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----|\z))",
        r"(?P<jwt>(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        concat!(
            r"(?P<key>(?-u:\b)(?:",
            r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}",
            r"|sk-(?:ant-|proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_-]{20,}",
            r"|gh[pousr]_[A-Za-z0-9]{30,}",
            r"|github_pat_[A-Za-z0-9_]{30,}",
            r"|glpat-[A-Za-z0-9_-]{20,}",
            r"|xox[abposr]-[A-Za-z0-9-]{10,}",
            r"|AIza[0-9A-Za-z_-]{35}",
            r"|[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}",
            r"|hf_[A-Za-z0-9]{30,}",
            r"|npm_[A-Za-z0-9]{36}",
            r"|pypi-[A-Za-z0-9_-]{50,}",
            r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
            r"|gsk_[A-Za-z0-9]{40,}",
            r"|xai-[A-Za-z0-9]{40,}",
            r"|dop_v1_[a-f0-9]{64}",
            r"))"
        ),
        r"(?i:(?-u:\b)(?:bearer|basic)\s+)(?P<cred>[A-Za-z0-9._~+/-]{12,}=*)",
        // Unbounded on purpose: `{0,256}` over a Unicode class made this one alternative most of
        // the cost of building the patterns (10 of 16 ms), paid by every short-lived `reins`.
        r"(?i:(?-u:\b)[a-z][a-z0-9+.-]{0,20}://[^/\s:@]*:)(?P<url>[^@\s/]+)@",
        concat!(
            r#"(?i:(?:password|passwd|passphrase|secret|api[_-]?key|access[_-]?key|access[_-]?token|auth[_-]?token|"#,
            r#"refresh[_-]?token|client[_-]?secret|private[_-]?key|credentials?)["']?\s{0,4}[:=]\s{0,4}["']?)"#,
            r#"(?P<assign>[^\s"',;&<>]{6,})"#,
        ),
        // A password option's value: `--password X`, `--token=X` (the `=` form is an assignment
        // above only for some names), `-u user:pass`, `-p X` for the programs that take one there.
        concat!(
            r#"(?i:(?:^|\s)--(?:password|passwd|pass|token|secret|api-?key|access-?token|auth-?token|client-secret)(?:\s+|=))"#,
            r#"(?P<flag>'[^'\n]+'|"[^"\n]+"|[^\s'"]{4,})"#,
        ),
        r#"(?:(?:^|\s)(?:-u|--user)(?:\s+|=)?[^\s:'"]+:)(?P<userpw>[^\s'"@]{3,})"#,
        concat!(
            r#"(?i:(?-u:\b)(?:sshpass|mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)(?-u:\b)[^\n|;&]*?\s-p)"#,
            r#"\s*(?P<dashp>'[^'\n]+'|"[^"\n]+"|[^\s'"-][^\s'"]{2,})"#,
        ),
        r#"(?i:(?-u:\b)(?:docker|podman|helm|oras)\s+(?:\S+\s+){0,3}login(?-u:\b)[^\n|;&]*?\s-p\s+)(?P<loginp>'[^'\n]+'|"[^"\n]+"|[^\s'"]{3,})"#,
        // Short names: `DB_PASS=`, `pass = ` in an ini file, `"pwd": "…"`, openssl's `pass:X`.
        concat!(
            r#"(?i:(?:(?-u:\b)|_)(?:pass|pwd|pw)(?:["']?\s{0,4}=\s{0,4}["']?|["']\s{0,4}:\s{0,4}["']|:))"#,
            r#"(?P<short>[^\s"',;&<>]{6,})"#,
        ),
        // Programs that take a password as an option's value or an operand.
        r#"(?i:(?-u:\b)redis-cli(?-u:\b)[^\n|;&]*?\s-a\s*)(?P<redis>'[^'\n]+'|"[^"\n]+"|[^\s'"-][^\s'"]{2,})"#,
        r#"(?:(?-u:\b)(?:zip|unzip|zipcloak)(?-u:\b)[^\n|;&]*?\s-P\s*)(?P<zipp>'[^'\n]+'|"[^"\n]+"|[^\s'"-][^\s'"]{2,})"#,
        r#"(?:(?-u:\b)7z[ar]?(?-u:\b)[^\n|;&]*?\s-p)(?P<sevenp>'[^'\n]+'|"[^"\n]+"|[^\s'"]{3,})"#,
        r#"(?:(?-u:\b)(?:smbclient|rpcclient|smbmap)(?-u:\b)[^\n|;&]*?\s-U\s*[^\s%'"]+%)(?P<smb>'[^'\n]+'|"[^"\n]+"|[^\s'"]{3,})"#,
        // `htpasswd -b[c…] FILE USER PASSWORD` (not `-n`, where no file comes first).
        r#"(?:(?-u:\b)htpasswd(?:\s+-[A-Za-mo-z]+)*?\s+-[A-Za-mo-z]*b[A-Za-mo-z]*(?:\s+-[A-Za-mo-z]+)*\s+[^\s-]\S*\s+\S+\s+)(?P<htp>'[^'\n]+'|"[^"\n]+"|[^\s'"]{3,})"#,
        // In prose: "the password is X", "password: X", "passphrase was X".
        r#"(?i:(?-u:\b)pass(?:word|wd|phrase|code)s?\s+(?:(?:is|was|are|=)\s+)?)(?P<prose>[^\s"',;]{4,})"#,
        r#"(?i:(?-u:\b)(?:login|credentials?)\s+(?:is|are|was)\s+[^\s/]+\s*/\s*)(?P<prose2>[^\s"',;]{4,})"#,
    ];
    Regex::new(&alternatives.join("|")).ok()
});

/// Base64 decoders that accept padded and unpadded input alike.
const LENIENT: base64::engine::GeneralPurposeConfig = base64::engine::GeneralPurposeConfig::new()
    .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent);
const STANDARD: base64::engine::GeneralPurpose =
    base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
const URL_SAFE: base64::engine::GeneralPurpose =
    base64::engine::GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// Runs of 20 or more token characters (`A–Z a–z 0–9 + / = _ -`): the candidates for encoded or
/// random secrets. A byte loop, several times faster than a regex for this.
fn tokens(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let bytes = text.as_bytes();
    let is_token =
        |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-');
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            while at < bytes.len() && !is_token(bytes[at]) {
                at += 1;
            }
            let start = at;
            while at < bytes.len() && is_token(bytes[at]) {
                at += 1;
            }
            if at - start >= 20 {
                return Some(start..at);
            }
        }
        None
    })
}

/// Every secret in `text`, in order, not overlapping.
pub fn find(text: &str) -> Vec<Finding> {
    find_with(text, false)
}

/// [`find`], and every random-looking token besides, whatever surrounds it: for what is kept for
/// good (the profile memory), where refusing a harmless token costs little and keeping a key
/// costs much.
pub fn find_strict(text: &str) -> Vec<Finding> {
    find_with(text, true)
}

fn find_with(text: &str, strict: bool) -> Vec<Finding> {
    let mut found = Vec::new();
    if text.len() < 8 {
        return found;
    }
    match PATTERNS.as_ref() {
        Some(re) => {
            for caps in re.captures_iter(text) {
                let named = [
                    ("pk", SecretKind::PrivateKey),
                    ("jwt", SecretKind::Jwt),
                    ("key", SecretKind::ProviderKey),
                    ("cred", SecretKind::Credential),
                    ("url", SecretKind::UrlPassword),
                    ("assign", SecretKind::Assignment),
                    ("flag", SecretKind::Password),
                    ("userpw", SecretKind::Password),
                    ("dashp", SecretKind::Password),
                    ("loginp", SecretKind::Password),
                    ("prose", SecretKind::Password),
                    ("prose2", SecretKind::Password),
                    ("short", SecretKind::Assignment),
                    ("redis", SecretKind::Password),
                    ("zipp", SecretKind::Password),
                    ("sevenp", SecretKind::Password),
                    ("smb", SecretKind::Password),
                    ("htp", SecretKind::Password),
                ];
                if let Some((m, kind, name)) = named
                    .iter()
                    .find_map(|(name, kind)| caps.name(name).map(|m| (m, *kind, *name)))
                {
                    // In prose, or after a short name (`pass`, `pwd`), a word is a password only
                    // if it looks like one.
                    if (name.starts_with("prose") || matches!(name, "short" | "assign" | "cred"))
                        && !looks_like_password(m.as_str())
                    {
                        continue;
                    }
                    // A URL written as an example of its form: `scheme://user:pass@host`.
                    if name == "url" && PLACEHOLDER_WORDS.contains(&m.as_str().to_ascii_lowercase().as_str())
                    {
                        continue;
                    }
                    // Where a value would be, code that fetches it or a placeholder for it is
                    // not one: `password = entry.getPassword()`, `API_KEY=sk-...`.
                    if matches!(name, "assign" | "short" | "key" | "flag")
                        && (is_code(m.as_str()) || is_placeholder(m.as_str()))
                    {
                        continue;
                    }
                    // "credentials: Permission denied" is an error message, not a credential.
                    if name == "assign"
                        && m.as_str().chars().all(|c| c.is_ascii_alphabetic())
                        && caps
                            .get(0)
                            .is_some_and(|all| all.as_str().to_ascii_lowercase().starts_with("credential"))
                    {
                        continue;
                    }
                    found.push(Finding {
                        kind,
                        range: m.range(),
                    });
                }
            }
        }
        // The patterns are constant and tested; if they ever failed to build, everything long is
        // treated as secret rather than nothing.
        None => {
            found.push(Finding {
                kind: SecretKind::HighEntropy,
                range: 0..text.len(),
            });
            return found;
        }
    }
    for range in tokens(text) {
        if found.iter().any(|f| overlaps(&f.range, &range)) {
            continue;
        }
        match judge_token(&text[range.clone()]) {
            Some(SecretKind::HighEntropy) if !strict && !credential_context(text, &range) => {}
            Some(kind) => found.push(Finding { kind, range }),
            None => {}
        }
    }
    found.sort_by_key(|f| f.range.start);
    // What already stands in for a secret (a redaction marker, a sealed token) is not one: text
    // redacted twice reads the same as once.
    let standing = stand_ins(text);
    if !standing.is_empty() {
        found.retain(|f| !standing.iter().any(|s| overlaps(s, &f.range)));
    }
    found
}

/// Where `text` holds `[redacted sha256:<12 hex>]` markers, `⟦sealed:…⟧` tokens and the
/// `[sealed secret]` marks they are shown as.
fn stand_ins(text: &str) -> Vec<Range<usize>> {
    static STAND_IN: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"\[redacted sha256:[0-9a-f]{12}\]|⟦sealed:[A-Za-z0-9_-]+⟧|\[sealed secret\]").ok()
    });
    if !text.contains("[redacted sha256:") && !text.contains("sealed") {
        return Vec::new();
    }
    STAND_IN
        .as_ref()
        .map(|re| re.find_iter(text).map(|m| m.range()).collect())
        .unwrap_or_default()
}

/// A word that could be a password rather than an English word: it has a digit, a symbol, or
/// both cases ("Tr0ub4dor", "correct-horse", "HunterTwo"), unlike "required" or "field".
fn looks_like_password(word: &str) -> bool {
    let digit = word.chars().any(|c| c.is_ascii_digit());
    let symbol = word.chars().any(|c| !c.is_alphanumeric());
    let upper = word.chars().skip(1).any(char::is_uppercase);
    let lower = word.chars().any(char::is_lowercase);
    digit || symbol || (upper && lower)
}

/// Whether `text` holds any secret.
pub fn contains(text: &str) -> bool {
    !find(text).is_empty()
}

/// Builds the patterns secrets are found by, now rather than at the first text looked at: a
/// short-lived process (a Claude Code hook) builds them on another thread while it opens the store.
pub fn prepare() {
    LazyLock::force(&PATTERNS);
}

/// `text` with every secret replaced by its `[redacted sha256:…]` marker.
pub fn redact(text: &str) -> Cow<'_, str> {
    let found = find(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        if f.range.start < at {
            continue;
        }
        out.push_str(&text[at..f.range.start]);
        out.push_str(&marker(&text[f.range.clone()]));
        at = f.range.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// `text` with every secret `source` holds masked wherever it occurs, even where `text` quotes
/// it out of the context that made it a secret (an argv list, one argument per item).
pub fn redact_found_in<'t>(text: &'t str, source: &str) -> Cow<'t, str> {
    let found: Vec<&str> = find(source)
        .into_iter()
        .map(|f| &source[f.range])
        .filter(|s| s.len() >= 4 && text.contains(*s))
        .collect();
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_owned();
    for secret in found {
        out = out.replace(secret, &marker(secret));
    }
    Cow::Owned(out)
}

/// The marker that stands in for `secret`.
pub fn marker(secret: &str) -> String {
    format!(
        "[redacted sha256:{}]",
        Digest::of(secret.as_bytes()).short()
    )
}

/// Redacts every string (and object key) inside `value`; true when anything was replaced.
pub fn redact_json(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::String(s) => match redact(s) {
            Cow::Borrowed(_) => false,
            Cow::Owned(clean) => {
                *s = clean;
                true
            }
        },
        Value::Array(items) => {
            let mut any = false;
            for v in items {
                any |= redact_json(v);
            }
            any
        }
        Value::Object(map) => {
            let dirty_keys: Vec<String> = map.keys().filter(|k| contains(k)).cloned().collect();
            let mut any = !dirty_keys.is_empty();
            for key in dirty_keys {
                if let Some(v) = map.remove(&key) {
                    map.insert(redact(&key).into_owned(), v);
                }
            }
            for v in map.values_mut() {
                any = redact_json(v) || any;
            }
            any
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// The JSON text `json` with its strings redacted, or None when it holds no secret. Text without
/// escapes is scanned as it is (a secret inside a string is found in the text around it); only
/// text that finds something, or has escapes, is parsed and walked.
pub fn redact_json_str(json: &str) -> Option<String> {
    if !json.contains('\\') && find(json).is_empty() {
        return None;
    }
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(mut value) => redact_json(&mut value).then(|| value.to_string()),
        Err(_) => match redact(json) {
            Cow::Borrowed(_) => None,
            Cow::Owned(clean) => Some(clean),
        },
    }
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// A long token that is not a known format: encoded secret, random-looking, or harmless.
fn judge_token(token: &str) -> Option<SecretKind> {
    let bytes = token.as_bytes();
    let hexish = bytes
        .iter()
        .all(|b| b.is_ascii_hexdigit() || *b == b'-' || *b == b'_');
    if hexish {
        return decodes_to_secret(hex_text(bytes).as_deref()).then_some(SecretKind::Encoded);
    }
    // Base64 of a secret: only a token in one alphabet can be (paths mix `/` with `-`).
    let standard = bytes.iter().any(|b| matches!(b, b'+' | b'/'));
    let url_safe = bytes.iter().any(|b| matches!(b, b'-' | b'_'));
    if token.len() >= 16 && !(standard && url_safe) {
        let engine = if url_safe { &URL_SAFE } else { &STANDARD };
        let decoded = engine.decode(token).ok();
        if decodes_to_secret(decoded.as_deref()) {
            return Some(SecretKind::Encoded);
        }
        // Encoded plain text is judged by what it says, which the patterns just read.
        if decoded.as_deref().is_some_and(is_text) {
            return None;
        }
    }
    high_entropy(token).then_some(SecretKind::HighEntropy)
}

/// The hex digits of `token` decoded, if they spell printable ASCII (the log is full of digests,
/// which stop at their first byte or two).
fn hex_text(token: &[u8]) -> Option<Vec<u8>> {
    let nibble = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut digits = token.iter().filter_map(|&b| nibble(b));
    let mut out = Vec::with_capacity(token.len() / 2);
    while let Some(hi) = digits.next() {
        let lo = digits.next()?;
        let byte = hi << 4 | lo;
        if !(byte == b'\n' || byte == b'\t' || (0x20..0x7f).contains(&byte)) {
            return None;
        }
        out.push(byte);
    }
    (out.len() >= 8).then_some(out)
}

fn is_text(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|s| {
        s.chars()
            .all(|c| !c.is_control() || c.is_ascii_whitespace())
    })
}

fn decodes_to_secret(decoded: Option<&[u8]>) -> bool {
    match decoded {
        // Every format the patterns know is text: random bytes decoded are not evidence of anything.
        Some(bytes) if bytes.len() >= 8 && is_text(bytes) => {
            let text = String::from_utf8_lossy(bytes);
            PATTERNS.as_ref().is_some_and(|re| re.is_match(&text))
        }
        _ => false,
    }
}

/// Random-looking: letters and digits mixed, with many distinct characters for its length. Words,
/// identifiers and paths stay well below the bar; keys and tokens of 20+ characters clear it.
fn high_entropy(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    let n = body.len();
    if n < 20 || wordy(body) {
        return false;
    }
    let has_digit = body.bytes().any(|b| b.is_ascii_digit());
    let has_upper = body.bytes().any(|b| b.is_ascii_uppercase());
    let has_lower = body.bytes().any(|b| b.is_ascii_lowercase());
    if !(has_digit && has_upper && has_lower) {
        return false;
    }
    // Paths and dotted names are split by separators into short pieces.
    if body.split(['/', '-', '_']).all(|piece| piece.len() < 16) {
        return false;
    }
    let mut counts = [0u32; 128];
    for b in body.bytes() {
        counts[usize::from(b & 0x7f)] += 1;
    }
    let len = n as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum();
    // A random token over ~64 symbols scores close to log2(n) for short n and ~5.5 for long ones.
    let bar = (len.log2() - 0.9).min(4.5);
    entropy >= bar
}

mod context;
use context::{credential_context, is_code, is_placeholder, wordy, PLACEHOLDER_WORDS};

#[cfg(test)]
mod tests;
