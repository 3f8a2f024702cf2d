//! `http.fetch` as an agent asks for it: one HTTP request, its method, URL, headers and body, checked
//! for form. How it is sent is the tools' (`tools::fetch`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::{invalid, parse_args, Headers, ToolError};

pub const BODY_LIMIT: usize = 1024 * 1024;
const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchRequest {
    pub method: String,
    pub url: url::Url,
    pub headers: Headers,
    pub body: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// GET (default), HEAD, POST, PUT, PATCH or DELETE.
    method: Option<String>,
    /// An https:// URL.
    url: String,
    /// Request headers.
    #[serde(default)]
    headers: Headers,
    /// The request body (text).
    body: Option<String>,
}

impl FetchRequest {
    pub fn parse(value: &Value) -> Result<Self, ToolError> {
        let t = "http.fetch";
        let a: Args = parse_args(t, value)?;
        let method = a
            .method
            .unwrap_or_else(|| "GET".into())
            .to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(invalid(
                t,
                format!("method {method:?} is not one of {}", METHODS.join(", ")),
            ));
        }
        if a.url.len() > 8192 {
            return Err(invalid(t, "`url` is longer than 8192 bytes"));
        }
        // https by default: a bare host and path is taken as https.
        let text = if a.url.contains("://") || a.url.contains(':') && !a.url.contains('.') {
            a.url.clone()
        } else {
            format!("https://{}", a.url)
        };
        let url = url::Url::parse(&text)
            .map_err(|e| invalid(t, format!("`url` is not a valid URL: {e}")))?;
        if a.headers.len() > 50 {
            return Err(invalid(t, "more than 50 headers"));
        }
        for (k, v) in &a.headers {
            if k.is_empty()
                || !k
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                return Err(invalid(t, format!("header name {k:?} is not valid")));
            }
            if v.contains(['\r', '\n', '\0']) {
                return Err(invalid(
                    t,
                    format!("header {k} contains a line break or NUL"),
                ));
            }
            if k.eq_ignore_ascii_case("host") {
                return Err(invalid(t, "the Host header is set from the URL"));
            }
        }
        if let Some(b) = &a.body {
            if b.len() > BODY_LIMIT {
                return Err(invalid(
                    t,
                    format!(
                        "`body` is {} bytes, over the {BODY_LIMIT}-byte limit",
                        b.len()
                    ),
                ));
            }
        }
        Ok(Self {
            method,
            url,
            headers: a.headers,
            body: a.body,
        })
    }

    pub fn canonical_args(&self) -> Value {
        json!({ "method": self.method, "url": self.url.as_str(), "headers": self.headers, "body": self.body })
    }

    /// Method, URL, headers and body as a reviewer reads them. Header values are shown, since
    /// the agent wrote every one of them (an `Authorization` header can carry a file's contents
    /// out); only what the redactor takes for a secret is masked, with a note saying so.
    pub fn display(&self) -> String {
        let mut s = format!("{} {}\n", self.method, self.url);
        for (k, v) in &self.headers {
            let shown = crate::secrets::redact(v);
            s.push_str(&format!("{k}: {shown}\n"));
            if matches!(shown, std::borrow::Cow::Owned(_)) {
                s.push_str(&format!(
                    "  (part of {k} looks like a secret and is masked; the agent wrote this value, {} characters; `reins approval show --action` shows it whole)\n",
                    v.chars().count()
                ));
            }
        }
        if let Some(b) = &self.body {
            s.push('\n');
            s.push_str(b);
            if !b.ends_with('\n') {
                s.push('\n');
            }
        }
        s
    }
}
