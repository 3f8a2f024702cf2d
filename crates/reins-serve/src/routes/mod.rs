//! The routes. Each handler is a thin adapter over one `reins_core::api::Reins` call, with the
//! same argument checks the desktop app's IPC commands use (`reins_core::api::face`).

pub mod audit;
pub mod memory;
pub mod reviews;
pub mod runs;
pub mod session;

use std::sync::Arc;

use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use axum::Router;

use crate::error::HttpError;
use crate::{assets, guard, live, Shared};

pub fn router(shared: Arc<Shared>) -> Router {
    let device_only = Router::new()
        .route("/api/session", get(session::session))
        .route("/api/events", get(live::events))
        .route("/api/approvals", get(reviews::list))
        .route("/api/approvals/{id}", get(reviews::show))
        .route("/api/approvals/batch/approve", post(reviews::approve_batch))
        .route("/api/approvals/{id}/approve", post(reviews::approve))
        .route("/api/approvals/{id}/reject", post(reviews::reject))
        .route("/api/grants", get(reviews::grants))
        .route("/api/grants/{id}/revoke", post(reviews::revoke_grant))
        .route("/api/runs", get(runs::list))
        .route("/api/runs/{id}", get(runs::detail))
        .route("/api/runs/{id}/context", get(runs::context))
        .route("/api/runs/{id}/usage", get(runs::usage))
        .route("/api/runs/{id}/pause", post(runs::pause))
        .route("/api/runs/{id}/resume", post(runs::resume))
        .route("/api/runs/{id}/cancel", post(runs::cancel))
        .route("/api/runs/{id}/budget/allow", post(runs::allow_more))
        .route("/api/runs/{id}/budget/stop", post(runs::stop_at_budget))
        .route("/api/memory", get(memory::list))
        .route("/api/memory/settings", get(memory::settings))
        .route("/api/memory/suggestions", get(memory::suggestions))
        .route("/api/memory/suggestions/{id}/accept", post(memory::accept))
        .route(
            "/api/memory/suggestions/{id}/dismiss",
            post(memory::dismiss),
        )
        .route(
            "/api/memory/{id}",
            get(memory::show).put(memory::edit).delete(memory::delete),
        )
        .route("/api/audit/page", post(audit::page))
        .route("/api/audit/verify", get(audit::verify))
        .route("/api/audit/export", post(audit::export))
        .route("/api/keys", get(session::keys))
        .route("/api/provider", get(session::provider))
        // Any other /api path: 404 for a device, 401 for anyone else (the guard runs first).
        .route("/api/{*rest}", axum::routing::any(not_found))
        .route_layer(from_fn_with_state(Arc::clone(&shared), guard::device));
    Router::new()
        .route("/api/pair", post(session::pair))
        .merge(device_only)
        .fallback(get(assets::serve))
        .layer(from_fn_with_state(
            Arc::clone(&shared),
            guard::host_and_origin,
        ))
        .with_state(shared)
}

async fn not_found() -> HttpError {
    HttpError::not_available("that route")
}
