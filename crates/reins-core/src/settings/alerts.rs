//! What a desktop tells its person about: the tray's count of approvals waiting, and a
//! notification for each new one and for each run that stops needing a change. On a team database
//! these cover the whole team's inbox, or only the runs started on this machine: a choice of this
//! machine's, kept in the config dir beside `team.toml` and never in the shared database, so one
//! reviewer's choice is not everyone's. The app's watcher is a thin loop over `view::Alerts::update`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The file, in the config dir, that says what this machine's tray and notifications cover.
pub const ALERTS_FILE: &str = "alerts.toml";

/// What the tray count and the desktop notifications cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum AlertScope {
    /// The whole team's inbox (the default: a shared database is for sharing the reviewing).
    #[default]
    Team,
    /// Runs started on this machine.
    Mine,
}

impl AlertScope {
    /// Whether a run started on `machine` is covered here, on `this_machine`; `shared`: the store
    /// is a team database. Without one every run is this machine's. A run that does not say where
    /// it started is not known to be mine.
    pub fn covers(self, shared: bool, machine: Option<&str>, this_machine: &str) -> bool {
        match self {
            Self::Team => true,
            Self::Mine => !shared || machine == Some(this_machine),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AlertsFile {
    scope: AlertScope,
}

/// What this machine's tray and notifications cover; the whole team's when nothing is saved. A
/// file that does not read is an error naming it, never taken for the default.
pub fn saved_alert_scope() -> Result<AlertScope> {
    scope_in(&crate::data_dir::config_dir()?.join(ALERTS_FILE))
}

/// Saves what this machine's tray and notifications cover.
pub fn save_alert_scope(scope: AlertScope) -> Result<AlertScope> {
    save_scope_in(&crate::data_dir::config_dir()?.join(ALERTS_FILE), scope)
}

fn scope_in(path: &Path) -> Result<AlertScope> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AlertScope::Team),
        Err(e) => return Err(Error::Invalid(format!("{}: {e}", path.display()))),
    };
    let file: AlertsFile =
        toml::from_str(&text).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
    Ok(file.scope)
}

fn save_scope_in(path: &Path, scope: AlertScope) -> Result<AlertScope> {
    let text = toml::to_string(&AlertsFile { scope }).map_err(|e| Error::Invalid(e.to_string()))?;
    let text = format!(
        "# What this machine's tray count and notifications cover on a team database:\n# \"team\" (every run) or \"mine\" (runs started on this machine).\n{text}"
    );
    crate::data_dir::write_config(path, &text)?;
    Ok(scope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mine_covers_runs_started_here_and_only_on_a_shared_database() {
        let here = "build-box";
        assert!(AlertScope::Team.covers(true, Some("laptop"), here));
        assert!(AlertScope::Mine.covers(true, Some(here), here));
        assert!(!AlertScope::Mine.covers(true, Some("laptop"), here));
        assert!(!AlertScope::Mine.covers(true, None, here));
        // This machine's own file: every run is this machine's.
        assert!(AlertScope::Mine.covers(false, Some("laptop"), here));
    }

    #[test]
    fn the_scope_is_saved_per_machine_and_a_bad_file_is_an_error() -> Result<()> {
        let io = |e: std::io::Error| Error::Invalid(e.to_string());
        let dir = tempfile::tempdir().map_err(io)?;
        let path = dir.path().join("config").join(ALERTS_FILE);
        assert_eq!(scope_in(&path)?, AlertScope::Team);
        save_scope_in(&path, AlertScope::Mine)?;
        assert_eq!(scope_in(&path)?, AlertScope::Mine);
        let text = std::fs::read_to_string(&path).map_err(io)?;
        assert!(text.contains("scope = \"mine\""), "{text}");
        save_scope_in(&path, AlertScope::Team)?;
        assert_eq!(scope_in(&path)?, AlertScope::Team);
        std::fs::write(&path, "scope = \"everyone\"\n").map_err(io)?;
        let refused = scope_in(&path);
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.to_string().contains(ALERTS_FILE)),
            "{refused:?}"
        );
        Ok(())
    }
}
