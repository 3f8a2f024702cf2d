//! An MCP server as a person registers it: a program Reins starts (stdio) or an address it connects
//! to (streamable HTTP). Its secrets are keyring names, never values. Registered servers live in
//! `mcp.toml` in the config dir, which agents may not write (it is a protected path).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::McpError;

/// The file registered servers are kept in, in the config dir.
pub const SERVERS_FILE: &str = "mcp.toml";

/// Replaced, in a program's arguments, by the run's workspace root.
pub const WORKSPACE_TOKEN: &str = "{workspace}";

/// One MCP server: how to reach it and what it is given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ServerSpec {
    /// The name tools are offered under (letters, digits, '-', '_').
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The program and its arguments (stdio), run without a shell in the workspace;
    /// `{workspace}` in an argument is the workspace root.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The streamable HTTP endpoint, instead of a program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A keyring entry whose value is sent as `Authorization: Bearer …` (HTTP servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_key: Option<String>,
    /// Variables set from the keyring: variable → key name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Variables passed through from Reins' own environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// Places the person lets the server write besides the workspace (it runs confined).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub may_write: Vec<std::path::PathBuf>,
    /// Seconds one tool call may take before the model is told the server hangs (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
}

impl ServerSpec {
    /// Checks everything a person gave: the name, exactly one of program and address, the
    /// variables and key names.
    pub fn check(&self) -> Result<(), McpError> {
        let bad = |detail: String| McpError::Invalid(detail);
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 32
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            return Err(bad(format!(
                "MCP server name {:?}: 1 to 32 letters, digits, '-' or '_'",
                self.name
            )));
        }
        match (&self.url, self.command.first()) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "an MCP server is either a program (after `--`) or a --url, not both".into(),
                ))
            }
            (None, None) => {
                return Err(bad(
                    "no MCP server to start: give its program after `--`, or --url".into(),
                ))
            }
            (None, Some(p)) if p.trim().is_empty() => {
                return Err(bad("the MCP server's program is empty".into()))
            }
            (Some(url), None) => {
                let parsed = url::Url::parse(url)
                    .map_err(|e| bad(format!("--url {url:?} is not a URL: {e}")))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(bad(format!("--url {url:?}: only http and https")));
                }
                if !self.env.is_empty() || !self.pass_env.is_empty() {
                    return Err(bad(
                        "--env and --pass-env are for servers Reins starts; an HTTP server gets --bearer-key"
                            .into(),
                    ));
                }
            }
            _ => {}
        }
        if self.timeout_s.is_some_and(|t| !(1..=3600).contains(&t)) {
            return Err(bad("--timeout: 1 to 3600 seconds".into()));
        }
        if self.bearer_key.is_some() && self.url.is_none() {
            return Err(bad(
                "--bearer-key is for HTTP servers (--url); a program gets its keys by --env".into(),
            ));
        }
        for var in self.env.keys().chain(self.pass_env.iter()) {
            let ok = !var.is_empty()
                && !var.starts_with(|c: char| c.is_ascii_digit())
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(bad(format!(
                    "environment variable {var:?}: letters, digits and '_', not starting with a digit"
                )));
            }
        }
        for key in self.env.values().chain(self.bearer_key.iter()) {
            crate::keys::check_name(key).map_err(bad)?;
        }
        Ok(())
    }

    /// The program's arguments for a run on `root`: `{workspace}` replaced.
    pub fn argv(&self, root: &Path) -> Vec<String> {
        let root = root.to_string_lossy();
        self.command
            .iter()
            .map(|a| a.replace(WORKSPACE_TOKEN, &root))
            .collect()
    }

    /// The command line or address, for people.
    pub fn display(&self) -> String {
        match &self.url {
            Some(url) => url.clone(),
            None => shell_words::join(&self.command),
        }
    }

    /// The keyring entries this server needs.
    pub fn keys(&self) -> Vec<&str> {
        self.env
            .values()
            .chain(self.bearer_key.iter())
            .map(String::as_str)
            .collect()
    }
}

#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServersFile {
    #[serde(default)]
    server: BTreeMap<String, ServerSpec>,
}

/// The registered servers in `file`, by name.
pub fn registered(file: &Path) -> Result<Vec<ServerSpec>, McpError> {
    Ok(read(file)?
        .server
        .into_iter()
        .map(|(name, s)| ServerSpec { name, ..s })
        .collect())
}

/// Registers `spec` in `file` under a name not taken yet.
pub fn register(file: &Path, spec: ServerSpec) -> Result<(), McpError> {
    spec.check()?;
    let mut all = read(file)?;
    if all.server.contains_key(&spec.name) {
        return Err(McpError::Conflict(format!(
            "an MCP server named {:?} is registered already; `reins mcp remove {}` first",
            spec.name, spec.name
        )));
    }
    let name = spec.name.clone();
    all.server.insert(
        name,
        ServerSpec {
            name: String::new(),
            ..spec
        },
    );
    write(file, &all)
}

/// Unregisters a server; false when none had the name.
pub fn unregister(file: &Path, name: &str) -> Result<bool, McpError> {
    let mut all = read(file)?;
    let removed = all.server.remove(name).is_some();
    if removed {
        write(file, &all)?;
    }
    Ok(removed)
}

fn read(file: &Path) -> Result<ServersFile, McpError> {
    match std::fs::read_to_string(file) {
        Ok(text) => toml::from_str(&text)
            .map_err(|e| McpError::Invalid(format!("{} cannot be read: {e}", file.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ServersFile::default()),
        Err(e) => Err(McpError::Io(format!("reading {}: {e}", file.display()))),
    }
}

fn write(file: &Path, all: &ServersFile) -> Result<(), McpError> {
    let text = toml::to_string(all)
        .map_err(|e| McpError::Invalid(format!("the MCP servers cannot be written: {e}")))?;
    let io = |e: std::io::Error| McpError::Io(format!("writing {}: {e}", file.display()));
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = file.with_extension("toml.tmp");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, file).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(name: &str, cmd: &[&str]) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            command: cmd.iter().map(|s| s.to_string()).collect(),
            url: None,
            bearer_key: None,
            env: BTreeMap::new(),
            pass_env: Vec::new(),
            may_write: Vec::new(),
            timeout_s: None,
        }
    }

    #[test]
    fn servers_register_list_and_remove() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join(SERVERS_FILE);
        let mut fs = stdio("fs", &["mcp-server-filesystem", "{workspace}"]);
        fs.env.insert("TOKEN".into(), "fs-token".into());
        register(&file, fs.clone())?;
        let again = register(&file, fs.clone());
        assert!(matches!(again, Err(McpError::Conflict(_))), "{again:?}");
        let list = registered(&file)?;
        assert_eq!(list, vec![fs.clone()]);
        assert_eq!(
            list[0].argv(Path::new("/w s")),
            vec!["mcp-server-filesystem".to_string(), "/w s".to_string()]
        );
        assert!(unregister(&file, "fs")?);
        assert!(!unregister(&file, "fs")?);
        assert!(registered(&file)?.is_empty());
        Ok(())
    }

    #[test]
    fn bad_registrations_say_what_is_wrong() {
        let cases: Vec<(ServerSpec, &str)> = vec![
            (stdio("a b", &["x"]), "letters, digits"),
            (stdio("ok", &[]), "no MCP server to start"),
            (
                ServerSpec {
                    url: Some("ftp://x".into()),
                    ..stdio("ok", &[])
                },
                "only http and https",
            ),
            (
                ServerSpec {
                    url: Some("http://127.0.0.1:1/mcp".into()),
                    ..stdio("ok", &["x"])
                },
                "not both",
            ),
            (
                ServerSpec {
                    bearer_key: Some("k".into()),
                    ..stdio("ok", &["x"])
                },
                "for HTTP servers",
            ),
        ];
        for (spec, want) in cases {
            let got = spec.check().err().map(|e| e.to_string()).unwrap_or_default();
            assert!(got.contains(want), "{spec:?}: {got}");
        }
    }
}
