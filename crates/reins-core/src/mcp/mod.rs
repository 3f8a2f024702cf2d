//! The Model Context Protocol, both ways. As a client, Reins starts the MCP servers a person
//! registered (`server.rs`) for a run, offers their tools to the model (`catalog.rs`) and carries
//! out each call the step protocol allowed (`hub.rs`, `connection.rs`): a call is an
//! [`crate::action::McpCall`], classified, reviewed with its exact arguments and journaled like any
//! other effect. As a server (`serve.rs`), Reins offers the user's profile memory to other agents.

pub mod catalog;
pub mod connection;
pub mod hub;
pub mod link;
pub mod serve;
pub mod server;

pub use catalog::Catalog;
pub use hub::Hub;
pub use server::{ServerSpec, SERVERS_FILE};

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// What a person gave is malformed.
    #[error("{0}")]
    Invalid(String),
    /// The name is taken.
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Io(String),
    /// The server cannot be started as registered (its program, its keys): a person must act.
    #[error("the MCP server `{server}` could not be started: {detail}")]
    Start { server: String, detail: String },
    /// The server started (or its address was reached) but did not initialize: it may next time.
    #[error("the MCP server `{server}` did not come up: {detail}")]
    Unavailable { server: String, detail: String },
    /// The server answered wrongly or not at all.
    #[error("the MCP server `{server}`: {detail}")]
    Server { server: String, detail: String },
}
