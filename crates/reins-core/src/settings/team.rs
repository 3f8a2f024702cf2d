//! Settings → Team database: which shared PostgreSQL this machine's app opens. The choice lives
//! outside any database, in `team.toml` in the config dir; the password never does (a keyring
//! entry is named instead, or PostgreSQL's own `.pgpass`, or a client certificate).
//! `REINS_DATABASE_URL` in the environment wins over it, as it does for the CLI.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Settings;
use crate::error::{Error, Result};

/// The file, in the config dir, that names the app's team database.
pub const TEAM_FILE: &str = "team.toml";

/// A shared database, as Settings saves it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TeamDatabase {
    /// `postgres://USER@HOST:PORT/DB`, with `?sslmode=verify-full&sslrootcert=…` for TLS. Never
    /// with a password.
    pub url: String,
    /// The keyring entry holding the password (`reins keys set NAME`); None: `.pgpass`,
    /// `PGPASSWORD` or a client certificate.
    #[serde(default)]
    pub password_key: Option<String>,
}

impl TeamDatabase {
    /// The URL and key name as they should be: a URL Reins can open, naming its user and no
    /// password, and a key name the keyring takes.
    pub fn checked(&self) -> Result<Self> {
        let url = self.url.trim().to_owned();
        let parsed = url::Url::parse(&url).map_err(|e| {
            Error::Invalid(format!(
                "the team database URL does not parse ({e}); it looks like postgres://USER@HOST:5432/DB"
            ))
        })?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql") {
            return Err(Error::Invalid(format!(
                "a team database is PostgreSQL: the URL starts with postgres://, not {}://",
                parsed.scheme()
            )));
        }
        if parsed.password().is_some() {
            return Err(Error::Invalid(
                "take the password out of the URL: name the keyring entry that holds it instead, so it is written in no file"
                    .into(),
            ));
        }
        if parsed.username().is_empty() || parsed.host_str().is_none_or(str::is_empty) {
            return Err(Error::Invalid(
                "name the user and the host: postgres://USER@HOST:5432/DB".into(),
            ));
        }
        let password_key = self
            .password_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned);
        if let Some(name) = &password_key {
            crate::keys::check_name(name).map_err(Error::Invalid)?;
        }
        Ok(Self { url, password_key })
    }
}

/// What the Team database panel shows.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TeamView {
    /// The shared database this process uses now (without a password); None: the SQLite file.
    pub connected: Option<String>,
    /// What Settings saved for the app's next start.
    pub saved: Option<TeamDatabase>,
    /// `REINS_DATABASE_URL` is set where the app runs: it wins over the saved choice.
    pub from_environment: bool,
    /// Whether this process hears other machines' changes at once: "local", "listening",
    /// "polling" (see `reins doctor`).
    pub wake_ups: String,
    /// The name this machine goes by in runs and decisions (`REINS_HOST`, else the host name).
    pub machine: String,
    /// What this machine's tray and notifications cover.
    pub alerts: super::alerts::AlertScope,
}

/// Whether a team database can be reached, before switching to it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TeamCheck {
    pub url: String,
    pub reachable: bool,
    /// The newest migration applied there; None: a new database (Reins creates its tables).
    pub schema_version: Option<i64>,
    /// The newest migration this build knows.
    pub supported_schema: i64,
    /// Why it cannot be used, with what to do.
    pub problem: Option<String>,
}

fn team_file() -> Result<PathBuf> {
    Ok(crate::data_dir::config_dir()?.join(TEAM_FILE))
}

/// The team database Settings saved; None when none is. A file that does not read is an error
/// naming it, never taken for "none".
pub fn saved_team_database() -> Result<Option<TeamDatabase>> {
    let path = team_file()?;
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Invalid(format!("{}: {e}", path.display()))),
    };
    let saved: TeamDatabase =
        toml::from_str(&text).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
    Ok(Some(saved.checked()?))
}

/// Saves (or with None, forgets) the team database the app opens on its next start.
pub fn save_team_database(db: Option<&TeamDatabase>) -> Result<Option<TeamDatabase>> {
    let path = team_file()?;
    let Some(db) = db else {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::Invalid(format!("{}: {e}", path.display()))),
        }
        return Ok(None);
    };
    let db = db.checked()?;
    let text = toml::to_string(&db).map_err(|e| Error::Invalid(e.to_string()))?;
    let text = format!(
        "# The shared database the Reins app opens (Settings → Team database). No password here:\n# it comes from the keyring entry named below, ~/.pgpass or a client certificate.\n{text}"
    );
    crate::data_dir::write_config(&path, &text)?;
    Ok(Some(db))
}

impl Settings<'_> {
    /// Connects to `db` (its password from the keyring when it names an entry) and reads its
    /// schema version, changing nothing there.
    pub async fn check_team_database(&self, db: &TeamDatabase) -> Result<TeamCheck> {
        let db = db.checked()?;
        let mut check = TeamCheck {
            url: crate::store::redacted(&db.url),
            reachable: false,
            schema_version: None,
            supported_schema: crate::store::Store::supported_schema(),
            problem: None,
        };
        let url = match &db.password_key {
            None => db.url.clone(),
            Some(name) => {
                match crate::keys::get_blocking(std::sync::Arc::clone(self.e.secrets()), name)
                    .await
                {
                    Ok(Some(password)) => crate::store::with_password(&db.url, password.expose())?,
                    Ok(None) => {
                        check.problem = Some(format!(
                            "the password {name} is not in the keyring: store it first (`reins keys set {name}`, or below)"
                        ));
                        return Ok(check);
                    }
                    Err(e) => {
                        check.problem = Some(e.to_string());
                        return Ok(check);
                    }
                }
            }
        };
        match crate::store::Store::probe_postgres(&url).await {
            Ok(version) => {
                check.reachable = true;
                check.schema_version = version;
                if version.is_some_and(|v| v > check.supported_schema) {
                    check.problem = Some(
                        "its schema is newer than this build: update Reins on this machine first"
                            .into(),
                    );
                }
            }
            Err(e) => check.problem = Some(e.to_string()),
        }
        Ok(check)
    }
}
