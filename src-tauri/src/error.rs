//! Errors as they cross IPC: a stable `code` the UI can branch on and a message for people.

use reins_core::api::ErrorCode;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct IpcError {
    pub code: ErrorCode,
    pub message: String,
}

impl IpcError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            code: ErrorCode::InvalidInput,
            message: message.into(),
        }
    }
}

impl From<reins_core::api::Error> for IpcError {
    fn from(e: reins_core::api::Error) -> Self {
        Self {
            code: e.code(),
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
