//! A request's JSON body, read with a size cap and decoded strictly. Too large, not JSON, or not
//! the shape the route takes: 400 with `{code, message}`, before the harness sees anything.

use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use crate::error::HttpError;

/// The largest body a route takes: an edited file of 4 MiB as JSON, with room for escaping.
pub const MAX_BODY: usize = 6 * 1024 * 1024;

pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = HttpError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::to_bytes(req.into_body(), MAX_BODY)
            .await
            .map_err(|_| {
                HttpError::invalid(format!(
                    "the body is larger than {} MiB, or was cut off",
                    MAX_BODY / 1024 / 1024
                ))
            })?;
        serde_json::from_slice(&bytes)
            .map(Body)
            .map_err(|e| HttpError::invalid(format!("the body is not what this route takes: {e}")))
    }
}
