//! The crate's error: each module's typed error rolled up, plus a stable `code` for transports.

use crate::agent::AgentError;
use crate::blob::BlobError;
use crate::checkpoint::CheckpointError;
use crate::failure::{classify_io, FailureClass};
use crate::store::StoreError;
use crate::action::ToolError;
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
    Agent(AgentError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    #[error(transparent)]
    Provider(#[from] crate::provider::ProviderError),
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),
    #[error(transparent)]
    Seal(#[from] crate::seal::SealError),
    /// The caller asked for something malformed.
    #[error("{0}")]
    Invalid(String),
    /// The request is well-formed but the run is not in a state that allows it.
    #[error("{0}")]
    Conflict(String),
    /// The approval was replaced by a newer one (its files changed on disk): review that one.
    #[error("{0}")]
    Superseded(String),
    /// The approval's review time ran out before the decision; it failed closed.
    #[error("{0}")]
    Expired(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The class of failure this is, for the run that met it (see [`crate::failure`]).
    pub fn class(&self) -> FailureClass {
        match self {
            Error::Store(e) => e.class(),
            Error::Blob(BlobError::Io { source, .. }) | Error::Io { source, .. } => {
                classify_io(source)
            }
            Error::Blob(BlobError::Corrupt { .. } | BlobError::Missing { .. }) => {
                FailureClass::CheckpointInvalid
            }
            Error::Checkpoint(_) => FailureClass::CheckpointInvalid,
            Error::Provider(p) if p.is_transient() => FailureClass::Transient,
            _ => FailureClass::Permanent,
        }
    }
}

impl From<crate::mcp::McpError> for Error {
    fn from(e: crate::mcp::McpError) -> Self {
        use crate::mcp::McpError;
        match e {
            McpError::Invalid(m) => Error::Invalid(m),
            McpError::Conflict(m) => Error::Conflict(m),
            other => Error::Io {
                context: "MCP".into(),
                source: std::io::Error::other(other.to_string()),
            },
        }
    }
}

impl From<AgentError> for Error {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::Invalid(m) => Error::Invalid(m),
            other => Error::Agent(other),
        }
    }
}

impl From<crate::data_dir::DataDirError> for Error {
    fn from(e: crate::data_dir::DataDirError) -> Self {
        use crate::data_dir::DataDirError;
        match e {
            DataDirError::NoHome(m) => Error::Invalid(m),
            DataDirError::Io { context, source } => Error::Io { context, source },
        }
    }
}

impl From<crate::device::DeviceError> for Error {
    fn from(e: crate::device::DeviceError) -> Self {
        Error::Invalid(e.to_string())
    }
}

impl From<crate::memory::MemoryError> for Error {
    fn from(e: crate::memory::MemoryError) -> Self {
        match e {
            crate::memory::MemoryError::Store(s) => Error::Store(s),
            other => Error::Invalid(other.to_string()),
        }
    }
}

/// What kind of error, promised to the faces: a screen or a script branches on it (the message is
/// for people). A code is added only when a caller needs to tell it apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum ErrorCode {
    /// What was named does not exist: a run, an approval, a grant, a fact, a key.
    NotFound,
    /// The approval was replaced by a newer one: review that one instead.
    Superseded,
    /// The approval's review time ran out: it failed closed and the action did not run.
    Expired,
    /// The state does not allow it (already decided, already ended, someone moved first).
    Conflict,
    /// What was given is malformed or refused (a bad id, an invalid edit, a pattern too wide).
    InvalidInput,
    /// The policy file cannot be read or does not parse.
    Policy,
    /// The database is damaged, or not a Reins database.
    CorruptDatabase,
    /// Written by a newer Reins.
    NewerSchema,
    Storage,
    BlobStore,
    Checkpoint,
    Io,
    /// The model server failed.
    Provider,
    /// No OS keyring, or it is locked.
    KeyringUnavailable,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotFound => "not_found",
            ErrorCode::Superseded => "superseded",
            ErrorCode::Expired => "expired",
            ErrorCode::Conflict => "conflict",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::Policy => "policy",
            ErrorCode::CorruptDatabase => "corrupt_database",
            ErrorCode::NewerSchema => "newer_schema",
            ErrorCode::Storage => "storage",
            ErrorCode::BlobStore => "blob_store",
            ErrorCode::Checkpoint => "checkpoint",
            ErrorCode::Io => "io",
            ErrorCode::Provider => "provider",
            ErrorCode::KeyringUnavailable => "keyring_unavailable",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The code the CLI's exit status and the app's `{code, message}` carry.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Store(StoreError::NotFound { .. }) => ErrorCode::NotFound,
            Error::Store(
                StoreError::NotADatabase { .. }
                | StoreError::Corrupt { .. }
                | StoreError::Damaged { .. },
            ) => ErrorCode::CorruptDatabase,
            Error::Store(StoreError::NewerSchema { .. }) => ErrorCode::NewerSchema,
            Error::Store(
                StoreError::LostLease { .. }
                | StoreError::StaleState { .. }
                | StoreError::Illegal { .. }
                | StoreError::Conflict(_),
            ) => ErrorCode::Conflict,
            Error::Store(_) => ErrorCode::Storage,
            Error::Blob(_) => ErrorCode::BlobStore,
            Error::Jail(_) | Error::Tool(_) | Error::Agent(_) | Error::Invalid(_) => {
                ErrorCode::InvalidInput
            }
            Error::Checkpoint(_) => ErrorCode::Checkpoint,
            Error::Policy(_) => ErrorCode::Policy,
            Error::Conflict(_) => ErrorCode::Conflict,
            Error::Superseded(_) => ErrorCode::Superseded,
            Error::Expired(_) => ErrorCode::Expired,
            Error::Io { .. } => ErrorCode::Io,
            Error::Provider(_) => ErrorCode::Provider,
            Error::Key(
                crate::keys::KeyError::Unavailable { .. } | crate::keys::KeyError::Locked { .. },
            ) => ErrorCode::KeyringUnavailable,
            Error::Key(crate::keys::KeyError::Missing(_)) => ErrorCode::NotFound,
            Error::Key(_) => ErrorCode::InvalidInput,
            Error::Seal(crate::seal::SealError::Keyring { source, .. }) => match source {
                crate::keys::KeyError::Unavailable { .. } | crate::keys::KeyError::Locked { .. } => {
                    ErrorCode::KeyringUnavailable
                }
                _ => ErrorCode::InvalidInput,
            },
            Error::Seal(
                crate::seal::SealError::KeyMissing { .. } | crate::seal::SealError::Unopened { .. },
            ) => ErrorCode::KeyringUnavailable,
            Error::Seal(crate::seal::SealError::Damaged { .. }) => ErrorCode::CorruptDatabase,
        }
    }

    /// True for errors caused by what the user typed or gave (exit status 2 in the CLI).
    pub fn is_user_error(&self) -> bool {
        matches!(
            self.code(),
            ErrorCode::InvalidInput
                | ErrorCode::NotFound
                | ErrorCode::Conflict
                | ErrorCode::Superseded
                | ErrorCode::Expired
                | ErrorCode::Policy
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_full_waits_for_a_person_and_busy_is_retried() {
        let full = Error::Io {
            context: "writing".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        assert_eq!(full.class(), FailureClass::Resource);
        let busy = Error::Io {
            context: "writing".into(),
            source: std::io::Error::from_raw_os_error(libc::EBUSY),
        };
        assert_eq!(busy.class(), FailureClass::Transient);
        let lost = Error::Store(StoreError::LostLease {
            run: "r".into(),
            fence: 1,
        });
        assert_eq!(lost.class(), FailureClass::WorkerLost);
        assert_eq!(Error::Invalid("x".into()).class(), FailureClass::Permanent);
        let file = Error::Io {
            context: "reading".into(),
            source: std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
        };
        assert_eq!(file.class(), FailureClass::Permanent);
    }
}
