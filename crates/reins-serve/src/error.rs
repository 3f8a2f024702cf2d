//! Errors as they cross HTTP: a status, a stable `code` and a message for people. What went wrong
//! inside the harness (storage, I/O) is logged on the server and answered with a generic message:
//! an error body never leaks a path, a query or a stack.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use reins_core::api::{Error, ErrorCode};
use serde::Serialize;

#[derive(Debug)]
pub struct HttpError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Seconds to wait before trying again (a throttled pairing).
    pub retry_after: Option<u64>,
}

#[derive(Serialize)]
struct Body<'a> {
    code: &'a str,
    message: &'a str,
}

impl HttpError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_input", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "pair this device first (`reins serve pair`), then send its token as `Authorization: Bearer …`",
        )
    }

    pub fn not_available(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} is not offered over HTTP"),
        )
    }
}

impl From<Error> for HttpError {
    fn from(e: Error) -> Self {
        let code = e.code();
        let status = match code {
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::Superseded | ErrorCode::Conflict => StatusCode::CONFLICT,
            ErrorCode::Expired => StatusCode::GONE,
            ErrorCode::InvalidInput | ErrorCode::Policy => StatusCode::BAD_REQUEST,
            ErrorCode::KeyringUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if e.is_user_error() {
            Self::new(status, code.as_str(), e.to_string())
        } else {
            tracing::error!("request failed: {e}");
            Self::new(
                status,
                code.as_str(),
                "the harness could not do that; the server's log says why",
            )
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(Body {
                code: self.code,
                message: &self.message,
            }),
        )
            .into_response();
        if let Some(s) = self.retry_after {
            if let Ok(v) = s.to_string().parse() {
                response.headers_mut().insert("retry-after", v);
            }
        }
        response
    }
}

pub type Result<T> = std::result::Result<T, HttpError>;
