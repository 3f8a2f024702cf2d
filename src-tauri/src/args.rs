//! What the webview may send, checked before the core sees it: the same checks every face uses
//! (`reins_core::api::face`).

pub use reins_core::api::face::*;
