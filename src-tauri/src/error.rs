//! Errors as they cross IPC: a stable `code` the UI can branch on and a message for people.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct IpcError {
    pub code: String,
    pub message: String,
}

impl IpcError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            code: "invalid_input".into(),
            message: message.into(),
        }
    }
}

impl From<reins_core::Error> for IpcError {
    fn from(e: reins_core::Error) -> Self {
        Self {
            code: e.code().into(),
            message: e.to_string(),
        }
    }
}

impl std::fmt::Display for IpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

pub type Result<T> = std::result::Result<T, IpcError>;
