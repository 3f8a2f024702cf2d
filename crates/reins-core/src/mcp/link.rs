//! Reins' memory server reached from inside an agent's sandbox. The `reins-memory` server a
//! confined agent is offered is a relay (`reins mcp relay`): it carries the MCP conversation over
//! a link ([`crate::contain::link`]) to the Reins that started the agent, which serves it there
//! with its own store.

use tokio::io::AsyncWriteExt as _;

pub use crate::contain::link::Link;

use super::serve::{Caller, MemoryServer};
use crate::store::Store;

/// The variable that hands the relay its token.
pub const TOKEN_ENV: &str = "REINS_MEMORY_TOKEN";

/// Listens on a free loopback port, serving `caller`'s memory server to each connection that
/// presents the token.
pub async fn open(store: Store, caller: Caller) -> std::io::Result<Link> {
    Link::open(move |read, write| {
        let server = MemoryServer::new(store.clone(), caller.clone());
        async move {
            let _ = server.serve_over((read, write)).await;
        }
    })
    .await
}

/// `reins mcp relay --port PORT`: this process's stdin and stdout, carried to the link on `port`
/// after the token from [`TOKEN_ENV`]. Opens nothing of Reins' own.
pub async fn relay(port: u16) -> Result<(), String> {
    let token = crate::contain::link::token_from(TOKEN_ENV)?;
    let stream = crate::contain::link::connect(port, &token, "Reins' memory link").await?;
    let (mut from, mut to) = stream.into_split();
    let up = async {
        let mut stdin = tokio::io::stdin();
        let _ = tokio::io::copy(&mut stdin, &mut to).await;
        let _ = to.shutdown().await;
    };
    let down = async {
        let mut stdout = tokio::io::stdout();
        let _ = tokio::io::copy(&mut from, &mut stdout).await;
        let _ = stdout.flush().await;
    };
    // Either side closing ends the conversation.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
    Ok(())
}
