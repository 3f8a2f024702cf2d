//! Where spans go, if anywhere: off unless the standard OpenTelemetry environment names an
//! endpoint, or `telemetry.toml` in the config dir does (the app's Settings write it), or
//! `[telemetry]` in the person's own `policy.toml` does. The first of these that names an
//! endpoint is the export; they are never merged. A header that carries a key names a key in the
//! OS keyring; its value is never written to a file.
//!
//! ```toml
//! endpoint = "http://localhost:6006"   # the collector; /v1/traces is added
//! content = false                      # prompts, arguments and reasons: off unless true
//! service_name = "reins"
//! [headers]
//! authorization = { key = "langfuse", prefix = "Basic " }   # `reins keys set langfuse`
//! x-langfuse-ingestion-version = "4"                         # not a credential: plain
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The file, in the config dir, that turns export on.
pub const TELEMETRY_FILE: &str = "telemetry.toml";

const TRACES_PATH: &str = "/v1/traces";

/// Export turned on: where, as whom, and with what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    /// The OTLP traces endpoint (over gRPC: the collector's address).
    pub endpoint: url::Url,
    pub protocol: Protocol,
    pub service: String,
    /// Whether prompts, arguments and people's reasons go out (redacted). Off by default.
    pub content: bool,
    pub headers: Vec<(String, HeaderValue)>,
    /// `OTEL_RESOURCE_ATTRIBUTES`, beside `service.name`.
    pub resource: Vec<(String, String)>,
    /// What turned it on, in words.
    pub source: String,
    /// How often a follower looks for new events (`OTEL_BSP_SCHEDULE_DELAY`, default 1 s).
    pub every: std::time::Duration,
    /// The OTLP/HTTP metrics endpoint (None: metrics off, `OTEL_METRICS_EXPORTER=none`).
    pub metrics: Option<url::Url>,
    /// How often metrics are sent (`OTEL_METRIC_EXPORT_INTERVAL`, default 60 s).
    pub metrics_every: std::time::Duration,
}

/// How spans travel to the collector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    /// OTLP over HTTP, protobuf bodies (port 4318 by convention): what every backend takes.
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP over gRPC (port 4317 by convention).
    #[serde(rename = "grpc")]
    Grpc,
}

impl Protocol {
    fn parse(what: &str, text: &str) -> Result<Self> {
        match text.trim() {
            "http/protobuf" => Ok(Self::HttpProtobuf),
            "grpc" => Ok(Self::Grpc),
            other => Err(Error::Invalid(format!(
                "{what}: {other:?} is not a protocol Reins sends: \"http/protobuf\" or \"grpc\""
            ))),
        }
    }
}

/// A header's value: given in the environment, or a key in the OS keyring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderValue {
    Plain(String),
    Keyring { key: String, prefix: String },
}

impl Export {
    /// The endpoint without credentials or query: the name of this export's cursor.
    pub fn destination(&self) -> String {
        let mut url = self.endpoint.clone();
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.set_query(None);
        url.to_string()
    }
}

/// `telemetry.toml`, or `[telemetry]` in `policy.toml`, as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub endpoint: String,
    #[serde(default)]
    pub content: bool,
    #[serde(default = "on")]
    pub metrics: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// "http/protobuf" (the default) or "grpc".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, FileHeader>,
}

/// A header in the file: a plain value (an experiment id, a version), or a key in the keyring.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FileHeader {
    Plain(String),
    Keyed(KeyedHeader),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyedHeader {
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}

/// Where a configuration was read from: its text, and the name its errors give it.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// `telemetry.toml`: the whole file.
    File(&'a str, &'a Path),
    /// The text Settings or `reins otel set` is about to write to `telemetry.toml`, checked first:
    /// its errors say nothing was saved.
    Unsaved(&'a str),
    /// `[telemetry]` in the person's policy file (never a workspace's: it could send their runs
    /// anywhere).
    Policy(&'a toml::Table, &'a Path),
}

impl Source<'_> {
    fn origin(&self) -> String {
        match self {
            Self::File(_, p) => p.display().to_string(),
            Self::Unsaved(_) => "the new settings (nothing was saved)".into(),
            Self::Policy(_, p) => format!("[telemetry] in {}", p.display()),
        }
    }

    fn read(&self) -> Result<File> {
        let bad = |e: &dyn std::fmt::Display| Error::Invalid(format!("{} does not read: {e}", self.origin()));
        match self {
            Self::File(text, _) | Self::Unsaved(text) => toml::from_str(text).map_err(|e| bad(&e)),
            Self::Policy(table, _) => toml::Value::Table((*table).clone()).try_into().map_err(|e| bad(&e)),
        }
    }
}

fn on() -> bool {
    true
}

/// Whether a header's name says it carries a credential.
fn carries_a_key(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["auth", "key", "token", "secret", "password", "cookie"]
        .iter()
        .any(|w| name.contains(w))
}

/// Where the app's Settings keep the export: `telemetry.toml` in the config dir.
pub fn file_path() -> Result<std::path::PathBuf> {
    Ok(crate::data_dir::config_dir()?.join(TELEMETRY_FILE))
}

/// `telemetry.toml`'s text; None when there is none.
pub fn file_text() -> Result<Option<String>> {
    let path = file_path()?;
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Invalid(format!("cannot read {}: {e}", path.display()))),
    }
}

/// This machine's export: the process environment, then `telemetry.toml` in the config dir, then
/// `policy`'s `[telemetry]` (the person's policy file, and its path). None: off. A file or variable
/// that does not read is an error naming it, never taken for "off".
pub fn load(policy: Option<(&toml::Table, &Path)>) -> Result<Option<Export>> {
    let path = file_path()?;
    let text = file_text()?;
    let source = match (&text, policy) {
        (Some(text), _) => Some(Source::File(text, &path)),
        (None, Some((table, path))) => Some(Source::Policy(table, path)),
        (None, None) => None,
    };
    resolve(&|name| std::env::var(name).ok(), source)
}

/// The export `env` and the configuration `source` turn on. Pure.
pub fn resolve(env: &dyn Fn(&str) -> Option<String>, source: Option<Source<'_>>) -> Result<Option<Export>> {
    let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let origin = source.as_ref().map(Source::origin).unwrap_or_default();
    let file: Option<File> = source.as_ref().map(Source::read).transpose()?;
    let protocol = match ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]
        .into_iter()
        .find_map(|var| env(var).map(|v| (var, v)))
    {
        Some((var, v)) => Protocol::parse(var, &v)?,
        None => file.as_ref().and_then(|f| f.protocol).unwrap_or_default(),
    };
    // Over HTTP a base URL gets the traces path; gRPC has no paths.
    let base = protocol == Protocol::HttpProtobuf;
    let (endpoint, source) = if let Some(url) = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        (
            parse("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &url, false)?,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".to_owned(),
        )
    } else if let Some(url) = env("OTEL_EXPORTER_OTLP_ENDPOINT") {
        (
            parse("OTEL_EXPORTER_OTLP_ENDPOINT", &url, base)?,
            "OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(),
        )
    } else if let Some(f) = &file {
        let what = format!("endpoint in {origin}");
        let url = parse(&what, &f.endpoint, base)?;
        let text = f.endpoint.as_str();
        if !url.username().is_empty() || url.password().is_some() || crate::secrets::redact(text) != text {
            return Err(Error::Invalid(format!(
                "{what}: a credential is not kept in a file; store it with `reins keys set NAME` and name it in [headers]"
            )));
        }
        (url, origin.clone())
    } else {
        return Ok(None);
    };
    let mut headers = Vec::new();
    if let Some(f) = &file {
        for (name, h) in &f.headers {
            let bad = |why: String| Error::Invalid(format!("header {name} in {origin}: {why}"));
            let value = match h {
                FileHeader::Keyed(h) => {
                    crate::keys::check_name(&h.key).map_err(bad)?;
                    HeaderValue::Keyring {
                        key: h.key.clone(),
                        prefix: h.prefix.clone(),
                    }
                }
                // A key is never written in a file: name one in the keyring instead.
                FileHeader::Plain(v) => {
                    if carries_a_key(name) || crate::secrets::redact(v) != v.as_str() {
                        return Err(bad(format!(
                            "a credential is not kept in a file; store it with `reins keys set NAME` and name that keyring entry instead ({name} = {{ key = \"NAME\" }} in the file)"
                        )));
                    }
                    HeaderValue::Plain(v.clone())
                }
            };
            headers.push((name.clone(), value));
        }
    }
    for var in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
        for (name, value) in pairs(var, env(var).as_deref())? {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            headers.push((name, HeaderValue::Plain(value)));
        }
    }
    // Metrics go beside the traces (`/v1/metrics`), unless turned off or the traces endpoint
    // was given whole and the metrics one was not.
    let metrics_off = env("OTEL_METRICS_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
        || file.as_ref().is_some_and(|f| !f.metrics);
    let metrics = if metrics_off {
        None
    } else if let Some(url) = env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
        Some(parse("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", &url, false)?)
    } else if protocol == Protocol::Grpc {
        Some(endpoint.clone())
    } else {
        endpoint.path().strip_suffix(TRACES_PATH).map(|base| {
            let mut url = endpoint.clone();
            url.set_path(&format!("{base}/v1/metrics"));
            url
        })
    };
    let content = env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .map(|v| v.trim().eq_ignore_ascii_case("true"))
        .unwrap_or_else(|| file.as_ref().is_some_and(|f| f.content));
    let service = env("OTEL_SERVICE_NAME")
        .or_else(|| file.as_ref().and_then(|f| f.service_name.clone()))
        .unwrap_or_else(|| "reins".to_owned());
    Ok(Some(Export {
        endpoint,
        protocol,
        service,
        content,
        headers,
        resource: pairs(
            "OTEL_RESOURCE_ATTRIBUTES",
            env("OTEL_RESOURCE_ATTRIBUTES").as_deref(),
        )?,
        source,
        every: millis("OTEL_BSP_SCHEDULE_DELAY", env("OTEL_BSP_SCHEDULE_DELAY"), 1000)?,
        metrics,
        metrics_every: millis(
            "OTEL_METRIC_EXPORT_INTERVAL",
            env("OTEL_METRIC_EXPORT_INTERVAL"),
            60_000,
        )?,
    }))
}

/// A period in milliseconds from the environment (10 ms to an hour), or the default.
fn millis(var: &str, value: Option<String>, default: u64) -> Result<std::time::Duration> {
    let ms = match value {
        None => default,
        Some(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|ms| (10..=3_600_000).contains(ms))
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "{var}: {v:?} is not a number of milliseconds between 10 and 3600000"
                ))
            })?,
    };
    Ok(std::time::Duration::from_millis(ms))
}

/// An http(s) URL; with `base`, the traces path is added unless it is there.
fn parse(what: &str, text: &str, base: bool) -> Result<url::Url> {
    let mut url = url::Url::parse(text.trim())
        .map_err(|e| Error::Invalid(format!("{what}: {text:?} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        let hint = if text.contains("://") {
            String::new()
        } else {
            format!("; did you mean http://{}?", text.trim())
        };
        return Err(Error::Invalid(format!(
            "{what}: {text:?} is not an http or https URL (OTLP goes over http or https, as HTTP/protobuf or gRPC){hint}"
        )));
    }
    if base && !url.path().ends_with(TRACES_PATH) {
        let path = format!("{}{TRACES_PATH}", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(url)
}

/// `k=v,k2=v2` with percent-encoded values, as the OpenTelemetry environment writes them.
fn pairs(var: &str, text: Option<&str>) -> Result<Vec<(String, String)>> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    text.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').ok_or_else(|| {
                Error::Invalid(format!("{var}: {:?} is not name=value", p.trim()))
            })?;
            let v = url::form_urlencoded::parse(format!("v={}", v.trim()).as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            Ok((k.trim().to_owned(), v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)], file: Option<&str>) -> Result<Option<Export>> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        resolve(
            &|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
            file.map(|text| Source::File(text, Path::new("/c/telemetry.toml"))),
        )
    }

    #[test]
    fn settings_checked_before_saving_are_not_called_a_file() {
        let err = resolve(&|_| None, Some(Source::Unsaved("endpoint = \"not a url\"\n")))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("the new settings (nothing was saved)"), "{err}");
        assert!(!err.contains("telemetry.toml"), "{err}");
    }

    #[test]
    fn off_unless_something_names_an_endpoint() {
        assert_eq!(with(&[], None).ok().flatten(), None);
        assert_eq!(with(&[("OTEL_SERVICE_NAME", "x")], None).ok().flatten(), None);
        let on = with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318")], None)
            .ok()
            .flatten();
        assert_eq!(
            on.as_ref().and_then(|e| e.metrics.as_ref()).map(url::Url::as_str),
            Some("http://h:4318/v1/metrics")
        );
        let on = on.as_ref().map(|e| (e.endpoint.as_str(), e.content, e.service.as_str()));
        assert_eq!(on, Some(("http://h:4318/v1/traces", false, "reins")));
        let no_metrics = with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"),
                ("OTEL_METRICS_EXPORTER", "none"),
            ],
            None,
        );
        assert_eq!(no_metrics.ok().flatten().map(|e| e.metrics), Some(None));
        let custom = with(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://h/in")], None);
        assert_eq!(custom.ok().flatten().map(|e| e.metrics), Some(None));
        let off = with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"),
                ("OTEL_SDK_DISABLED", "true"),
            ],
            None,
        );
        assert_eq!(off.ok().flatten(), None);
    }

    #[test]
    fn the_environment_wins_over_the_file_and_a_traces_endpoint_is_kept_as_is() {
        let file = "endpoint = \"https://file/otel/\"\ncontent = true\n[headers]\napi_key = { key = \"phoenix\" }\nx-mlflow-experiment-id = \"123\"\n";
        let e = with(&[], Some(file)).ok().flatten();
        let e = e.as_ref();
        assert_eq!(e.map(|e| e.endpoint.as_str()), Some("https://file/otel/v1/traces"));
        assert_eq!(e.map(|e| e.content), Some(true));
        assert_eq!(
            e.map(|e| e.headers.clone()),
            Some(vec![
                (
                    "api_key".to_owned(),
                    HeaderValue::Keyring { key: "phoenix".into(), prefix: String::new() }
                ),
                ("x-mlflow-experiment-id".to_owned(), HeaderValue::Plain("123".into())),
            ])
        );
        let e = with(
            &[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://env:1/custom"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api_key=a%20b,x=1"),
                ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false"),
            ],
            Some(file),
        )
        .ok()
        .flatten();
        let e = e.as_ref();
        assert_eq!(e.map(|e| e.endpoint.as_str()), Some("http://env:1/custom"));
        assert_eq!(e.map(|e| e.content), Some(false));
        assert_eq!(
            e.map(|e| e.headers.clone()),
            Some(vec![
                ("x-mlflow-experiment-id".to_owned(), HeaderValue::Plain("123".into())),
                ("api_key".to_owned(), HeaderValue::Plain("a b".into())),
                ("x".to_owned(), HeaderValue::Plain("1".into())),
            ])
        );
    }

    #[test]
    fn what_does_not_read_is_an_error_never_off() {
        for (vars, file) in [
            (vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")], None),
            (vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://h:4317")], None),
            (vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"), ("OTEL_RESOURCE_ATTRIBUTES", "novalue")], None),
            (vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"), ("OTEL_BSP_SCHEDULE_DELAY", "soon")], None),
            (vec![], Some("endpoint = 3")),
            (vec![], Some("endpoint = \"https://u:p@h\"")),
            (vec![], Some("endpoint = \"https://h/?api_key=sk-ant-api03-0123456789abcdefghijklmnopqrstuvwxyzABCDEF\"")),
            (vec![], Some("endpoint = \"http://h\"\ncolour = 1")),
            (vec![], Some("endpoint = \"http://h\"\n[headers]\na = { key = \"../x\" }")),
            (vec![], Some("endpoint = \"http://h\"\n[headers]\nAuthorization = \"Basic abc\"")),
            (vec![], Some("endpoint = \"http://h\"\n[headers]\nx-team = \"sk-ant-api03-0123456789abcdefghijklmnopqrstuvwxyzABCDEF\"")),
        ] {
            let err = with(&vars, file).err().map(|e| e.to_string());
            assert!(err.is_some(), "{vars:?} {file:?}");
        }
    }

    #[test]
    fn the_settings_file_wins_over_the_policy_file_and_errors_name_their_source() {
        let table: toml::Table = toml::from_str("endpoint = \"http://policy:4318\"\ncontent = true").unwrap_or_default();
        let policy = Source::Policy(&table, Path::new("/c/policy.toml"));
        let e = resolve(&|_| None, Some(policy)).ok().flatten();
        assert_eq!(
            e.as_ref().map(|e| (e.endpoint.as_str(), e.content, e.source.as_str())),
            Some(("http://policy:4318/v1/traces", true, "[telemetry] in /c/policy.toml"))
        );
        let bad: toml::Table = toml::from_str("endpoint = \"ftp://h\"").unwrap_or_default();
        let err = resolve(&|_| None, Some(Source::Policy(&bad, Path::new("/c/policy.toml"))));
        assert!(
            err.as_ref().err().map(ToString::to_string).is_some_and(|m| m.contains("[telemetry] in /c/policy.toml")),
            "{err:?}"
        );
    }

    #[test]
    fn grpc_takes_the_address_as_it_is_and_sends_metrics_there_too() {
        let e = with(
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
            None,
        )
        .ok()
        .flatten();
        let e = e.as_ref();
        assert_eq!(e.map(|e| (e.endpoint.as_str(), e.protocol)), Some(("http://h:4317/", Protocol::Grpc)));
        assert_eq!(e.and_then(|e| e.metrics.as_ref()).map(url::Url::as_str), Some("http://h:4317/"));
        let file = with(&[], Some("endpoint = \"https://h:4317\"\nprotocol = \"grpc\"\n")).ok().flatten();
        assert_eq!(file.map(|e| e.protocol), Some(Protocol::Grpc));
        let json = with(
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
            None,
        );
        assert!(json.is_err());
    }

    #[test]
    fn the_destination_has_no_credentials() {
        let e = with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://u:p@h/x?k=1")], None)
            .ok()
            .flatten();
        assert_eq!(e.map(|e| e.destination()), Some("https://h/x/v1/traces".to_owned()));
    }
}
