//! Reins' memory server reached from inside an agent's sandbox. A confined agent cannot open
//! Reins' store (its profile hides the data dir), so the `reins-memory` server it is offered is a
//! relay (`reins mcp relay`): it carries the MCP conversation over one loopback TCP port to the
//! Reins that started the agent, which serves it there with its own store. The port listens on
//! 127.0.0.1 only while the agent runs, and answers only a connection that first sends the link's
//! token, which only the agent's session was told.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::serve::{Caller, MemoryServer};
use crate::store::Store;

/// The variable that hands the relay its token.
pub const TOKEN_ENV: &str = "REINS_MEMORY_TOKEN";

/// How long a connection has to present the token.
const HELLO: Duration = Duration::from_secs(10);

/// A listening link: closed when dropped.
pub struct Link {
    pub port: u16,
    pub token: String,
    task: tokio::task::JoinHandle<()>,
}

impl Link {
    /// Listens on a free loopback port, serving `caller`'s memory server to each connection that
    /// presents the token.
    pub async fn open(store: Store, caller: Caller) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let token = new_token()?;
        let expected = token.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let server = MemoryServer::new(store.clone(), caller.clone());
                let expected = expected.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, &expected, server).await;
                });
            }
        });
        Ok(Self { port, token, task })
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn new_token() -> std::io::Result<String> {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 24];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| std::io::Error::other("no randomness for the memory link's token"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One connection: the token line, then MCP until the relay goes away.
async fn serve(stream: TcpStream, expected: &str, server: MemoryServer) -> Result<(), String> {
    let (read, write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut hello = Vec::new();
    let presented = tokio::time::timeout(HELLO, async {
        let mut limited = (&mut read).take(256);
        limited.read_until(b'\n', &mut hello).await
    })
    .await;
    let hello = String::from_utf8_lossy(&hello);
    // Compared as hashes: how long a comparison takes says nothing about the token.
    let same = crate::digest::Digest::of(hello.trim_end().as_bytes())
        == crate::digest::Digest::of(expected.as_bytes());
    if !matches!(presented, Ok(Ok(_))) || !same {
        return Err("the connection did not present the link's token".into());
    }
    server.serve_over((read, write)).await
}

/// `reins mcp relay --port PORT`: this process's stdin and stdout, carried to the link on `port`
/// after the token from [`TOKEN_ENV`]. Opens nothing of Reins' own.
pub async fn relay(port: u16) -> Result<(), String> {
    let token = std::env::var(TOKEN_ENV)
        .map_err(|_| format!("{TOKEN_ENV} is not set: the relay is started by Reins for an agent"))?;
    let stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot reach Reins' memory link on port {port}: {e}"))?;
    let (mut from, mut to) = stream.into_split();
    to.write_all(format!("{token}\n").as_bytes())
        .await
        .map_err(|e| format!("the memory link closed: {e}"))?;
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
