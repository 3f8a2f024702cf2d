//! Where Reins keeps its data: the platform data dir unless the user names another.

use std::path::{Path, PathBuf};

/// What can go wrong finding or making Reins' folders and config files.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    /// No home directory, and nothing named instead.
    #[error("{0}")]
    NoHome(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

type Result<T> = std::result::Result<T, DataDirError>;

/// The environment variable that overrides the data dir (the CLI's `--data-dir` wins over it).
pub const DATA_DIR_ENV: &str = "REINS_DATA_DIR";

#[derive(Clone, Debug)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// `explicit` if given, else the platform data dir (e.g. `~/.local/share/reins`).
    pub fn resolve(explicit: Option<PathBuf>) -> Result<Self> {
        let root = match explicit {
            Some(p) => p,
            None => directories::ProjectDirs::from("dev", "reins", "reins")
                .map(|d| d.data_dir().to_owned())
                .ok_or_else(|| {
                    DataDirError::NoHome(format!(
                        "no home directory to keep data in; set {DATA_DIR_ENV} or pass --data-dir"
                    ))
                })?,
        };
        Ok(Self { root })
    }

    pub fn at(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn database(&self) -> PathBuf {
        self.root.join("reins.db")
    }

    /// This machine's record of the highest audit chain head it has seen in the shared database at
    /// `shown` (team mode; its URL without password): one file per database, named by a digest.
    pub fn team_anchor(&self, shown: &str) -> PathBuf {
        let digest = crate::digest::Digest::of(shown.as_bytes());
        let short: String = digest.as_str().chars().take(16).collect();
        self.root.join(format!("team-{short}.audit-head"))
    }

    pub fn blobs(&self) -> PathBuf {
        self.root.join("blobs")
    }

    /// External agents' stderr, one bounded log per run.
    pub fn agent_logs(&self) -> PathBuf {
        self.root.join("agent-logs")
    }

    pub fn ensure(&self) -> Result<()> {
        std::fs::create_dir_all(&self.root).map_err(|source| DataDirError::Io {
            context: format!("creating data dir {}", self.root.display()),
            source,
        })
    }
}

/// The environment variable that overrides the config dir (where `policy.toml` lives).
pub const CONFIG_DIR_ENV: &str = "REINS_CONFIG_DIR";

/// The config dir: `$REINS_CONFIG_DIR`, else the platform's (e.g. `~/.config/reins`).
pub fn config_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(CONFIG_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    directories::ProjectDirs::from("dev", "reins", "reins")
        .map(|d| d.config_dir().to_owned())
        .ok_or_else(|| {
            DataDirError::NoHome(format!(
                "no home directory to find the config in; set {CONFIG_DIR_ENV}"
            ))
        })
}

/// Writes a small file in the config dir whole and durably (temp file, fsync, rename, fsync of
/// the directory): a crash leaves the old one or the new, never half of either, and once this
/// returns the new one survives a power cut.
pub fn write_config(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    let io = |source| DataDirError::Io {
        context: format!("writing {}", path.display()),
        source,
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension("toml.tmp");
    let mut file = std::fs::File::create(&tmp).map_err(io)?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Some(dir) = dir {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
    }
    Ok(())
}
