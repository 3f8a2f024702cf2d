//! Settings → Traces: where this machine sends OpenTelemetry, as the app's form edits it. The
//! choice lives in `telemetry.toml` in the config dir (see `telemetry::config`); a header that
//! carries a credential names an OS keyring entry, and the form refuses one typed in plain.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::telemetry::config::{self, File, FileHeader, KeyedHeader, Protocol, Source};

/// The export as the Settings form shows and saves it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TelemetrySettings {
    /// The collector's base URL (`/v1/traces` is added) or its traces endpoint.
    pub endpoint: String,
    /// Whether goals, arguments, replies and people's reasons go out (redacted). Off by default.
    pub content: bool,
    /// Whether metrics go beside the traces (`/v1/metrics`).
    pub metrics: bool,
    /// `service.name` (None: "reins").
    pub service_name: Option<String>,
    /// OTLP over gRPC (port 4317 by convention) instead of HTTP/protobuf (4318).
    #[serde(default)]
    pub grpc: bool,
    pub headers: Vec<TelemetryHeader>,
}

/// One header sent with every export: a plain value, or a keyring entry's secret after `prefix`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TelemetryHeader {
    pub name: String,
    /// A value that is not a credential (an experiment id, a version).
    pub value: Option<String>,
    /// The keyring entry holding the credential (`reins keys set NAME`).
    pub key: Option<String>,
    /// Written before the keyring's secret: `Bearer `, `Basic `.
    pub prefix: String,
}

impl TelemetrySettings {
    fn of(file: File) -> Self {
        let headers = file
            .headers
            .into_iter()
            .map(|(name, h)| match h {
                FileHeader::Plain(value) => TelemetryHeader {
                    name,
                    value: Some(value),
                    key: None,
                    prefix: String::new(),
                },
                FileHeader::Keyed(k) => TelemetryHeader {
                    name,
                    value: None,
                    key: Some(k.key),
                    prefix: k.prefix,
                },
            })
            .collect();
        Self {
            endpoint: file.endpoint,
            content: file.content,
            metrics: file.metrics,
            service_name: file.service_name,
            grpc: file.protocol == Some(Protocol::Grpc),
            headers,
        }
    }

    /// The file this form writes. A header with no name, a bad name, a name given twice, or both
    /// or neither of a value and a key is refused here; what the export itself refuses (a URL
    /// that is not http, a credential in plain) is refused when the text is read back.
    fn file(&self) -> Result<File> {
        let mut headers = BTreeMap::new();
        for h in &self.headers {
            let name = h.name.trim().to_ascii_lowercase();
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if name.is_empty() || !name.chars().all(token) {
                return Err(Error::Invalid(format!(
                    "{:?} is not a header name (letters, digits and - _ . only)",
                    h.name
                )));
            }
            let value = match (h.value.as_deref().map(str::trim), h.key.as_deref().map(str::trim)) {
                (Some(v), None) if !v.is_empty() => FileHeader::Plain(v.to_owned()),
                (None, Some(k)) if !k.is_empty() => FileHeader::Keyed(KeyedHeader {
                    key: k.to_owned(),
                    prefix: h.prefix.clone(),
                }),
                _ => {
                    return Err(Error::Invalid(format!(
                        "header {name}: give either a value or the keyring entry that holds it"
                    )))
                }
            };
            if headers.insert(name.clone(), value).is_some() {
                return Err(Error::Invalid(format!("header {name} is given twice")));
            }
        }
        let service_name = self
            .service_name
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        Ok(File {
            endpoint: self.endpoint.trim().to_owned(),
            content: self.content,
            metrics: self.metrics,
            service_name,
            protocol: self.grpc.then_some(Protocol::Grpc),
            headers,
        })
    }
}

/// What `telemetry.toml` holds; None when there is none. A file that does not read is an error
/// naming it.
pub fn saved_telemetry() -> Result<Option<TelemetrySettings>> {
    let Some(text) = config::file_text()? else {
        return Ok(None);
    };
    let path = config::file_path()?;
    let file: File = toml::from_str(&text)
        .map_err(|e| Error::Invalid(format!("{} does not read: {e}", path.display())))?;
    Ok(Some(TelemetrySettings::of(file)))
}

/// Saves the export (None: removes `telemetry.toml`, so export is off unless the environment or
/// the policy file turn it on). Checked as the export will read it before anything is written.
pub fn save_telemetry(new: Option<&TelemetrySettings>) -> Result<()> {
    let path = config::file_path()?;
    let Some(new) = new else {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::Io {
                context: format!("removing {}", path.display()),
                source: e,
            }),
            _ => Ok(()),
        };
    };
    let body = toml::to_string(&new.file()?).map_err(|e| Error::Invalid(e.to_string()))?;
    let text = format!(
        "# Where this machine sends OpenTelemetry traces (docs/observability.md). Written by\n# Settings → Traces or `reins otel set`; the OTEL_* environment wins over it. Credentials\n# are keyring entries.\n{body}"
    );
    config::resolve(&|_| None, Some(Source::Unsaved(&text)))?;
    crate::data_dir::write_config(&path, &text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(headers: Vec<TelemetryHeader>) -> TelemetrySettings {
        TelemetrySettings {
            endpoint: " http://localhost:6006 ".into(),
            content: false,
            metrics: true,
            service_name: Some(" ".into()),
            grpc: false,
            headers,
        }
    }

    fn header(name: &str, value: Option<&str>, key: Option<&str>) -> TelemetryHeader {
        TelemetryHeader {
            name: name.into(),
            value: value.map(Into::into),
            key: key.map(Into::into),
            prefix: "Bearer ".into(),
        }
    }

    #[test]
    fn the_form_and_the_file_say_the_same() {
        let f = form(vec![header("Authorization", None, Some("phoenix")), header("x-v", Some("4"), None)]);
        let file = f.file().ok();
        let back = file.clone().map(TelemetrySettings::of);
        assert_eq!(file.as_ref().map(|f| f.endpoint.as_str()), Some("http://localhost:6006"));
        assert_eq!(back.as_ref().map(|b| b.service_name.clone()), Some(None));
        let names: Vec<_> = back.iter().flat_map(|b| b.headers.iter().map(|h| h.name.clone())).collect();
        assert_eq!(names, ["authorization", "x-v"]);
        let text = file.map(|f| toml::to_string(&f).unwrap_or_default()).unwrap_or_default();
        let read = config::resolve(&|_| None, Some(Source::File(&text, std::path::Path::new("t.toml"))));
        assert_eq!(
            read.ok().flatten().map(|e| e.headers.len()),
            Some(2),
            "{text}"
        );
    }

    #[test]
    fn a_header_must_say_one_thing() {
        for bad in [
            header("", Some("1"), None),
            header("bad name", Some("1"), None),
            header("x", None, None),
            header("x", Some("1"), Some("k")),
            header("x", Some(" "), None),
        ] {
            assert!(form(vec![bad.clone()]).file().is_err(), "{bad:?}");
        }
        let twice = form(vec![header("X", Some("1"), None), header("x", Some("2"), None)]);
        assert!(twice.file().is_err());
    }
}
