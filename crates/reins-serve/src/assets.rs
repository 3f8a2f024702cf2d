//! The React UI, built for the browser (`npm --prefix ui run build`) and served from the binary:
//! the same views as the desktop app, with the HTTP backend. A release build embeds `ui/dist`; a
//! debug build reads it from the source tree.

use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

#[derive(rust_embed::RustEmbed)]
#[folder = "../../ui/dist"]
#[allow_missing = true]
struct Ui;

/// Only what the UI itself needs: its own scripts and styles, no framing, no other site.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; \
                   base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "json" | "webmanifest" => "application/json",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

pub async fn serve(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    // A path the UI routes itself (or the root) gets the page; files get themselves.
    let (name, file) = match Ui::get(path) {
        Some(f) if !path.is_empty() => (path, f),
        _ => match Ui::get("index.html") {
            Some(f) => ("index.html", f),
            None => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The web UI was not built into this reins: run `npm --prefix ui run build`, then build reins again. The API under /api works without it.",
                )
                    .into_response()
            }
        },
    };
    let mut response = (
        [(header::CONTENT_TYPE, content_type(name))],
        file.data.into_owned(),
    )
        .into_response();
    if name == "index.html" {
        if let Ok(v) = header::HeaderValue::from_str(CSP) {
            response
                .headers_mut()
                .insert(header::CONTENT_SECURITY_POLICY, v);
        }
    }
    response
}
