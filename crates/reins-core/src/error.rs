//! The crate's error: each module's typed error rolled up, plus a stable `code` for transports.

use crate::agent::AgentError;
use crate::blob::BlobError;
use crate::checkpoint::CheckpointError;
use crate::store::StoreError;
use crate::tools::ToolError;
use crate::workspace::JailError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Blob(#[from] BlobError),
    #[error(transparent)]
    Jail(#[from] JailError),
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    #[error(transparent)]
    Provider(#[from] crate::provider::ProviderError),
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),
    /// The caller asked for something malformed.
    #[error("{0}")]
    Invalid(String),
    /// The request is well-formed but the run is not in a state that allows it.
    #[error("{0}")]
    Conflict(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<crate::memory::MemoryError> for Error {
    fn from(e: crate::memory::MemoryError) -> Self {
        match e {
            crate::memory::MemoryError::Store(s) => Error::Store(s),
            other => Error::Invalid(other.to_string()),
        }
    }
}

impl Error {
    /// A stable code for the CLI's exit status and the desktop app's `{code, message}`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Store(StoreError::NotFound { .. }) => "not_found",
            Error::Store(StoreError::NotADatabase { .. } | StoreError::Corrupt { .. }) => {
                "corrupt_database"
            }
            Error::Store(StoreError::NewerSchema { .. }) => "newer_schema",
            Error::Store(
                StoreError::LostLease { .. }
                | StoreError::StaleState { .. }
                | StoreError::Illegal { .. }
                | StoreError::Conflict(_),
            ) => "conflict",
            Error::Store(_) => "storage",
            Error::Blob(_) => "blob_store",
            Error::Jail(_) | Error::Tool(_) | Error::Agent(_) | Error::Invalid(_) => {
                "invalid_input"
            }
            Error::Checkpoint(_) => "checkpoint",
            Error::Policy(_) => "policy",
            Error::Conflict(_) => "conflict",
            Error::Io { .. } => "io",
            Error::Provider(_) => "provider",
            Error::Key(
                crate::keys::KeyError::Unavailable { .. } | crate::keys::KeyError::Locked { .. },
            ) => "keyring_unavailable",
            Error::Key(crate::keys::KeyError::Missing(_)) => "not_found",
            Error::Key(_) => "invalid_input",
        }
    }

    /// True for errors caused by what the user typed or gave (exit status 2 in the CLI).
    pub fn is_user_error(&self) -> bool {
        matches!(
            self.code(),
            "invalid_input" | "not_found" | "conflict" | "policy"
        )
    }

    /// Another worker took the run, or someone else changed its state: stop driving it.
    pub fn is_lost_ownership(&self) -> bool {
        matches!(
            self,
            Error::Store(StoreError::LostLease { .. } | StoreError::StaleState { .. })
        )
    }
}
