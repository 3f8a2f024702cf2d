//! A link from inside a sandbox back to the Reins that started it. A confined agent cannot open
//! Reins' store (its profile hides the data dir), so what it needs of Reins (the memory server,
//! Claude Code's hook) reaches Reins over one loopback TCP port instead. The port listens on
//! 127.0.0.1 only while the agent runs, and serves only a connection whose first line is the
//! link's token, which only that agent's environment was told.

use std::future::Future;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

/// How long a connection has to present the token.
const HELLO: Duration = Duration::from_secs(10);

/// A listening link: closed when dropped.
pub struct Link {
    pub port: u16,
    pub token: String,
    task: tokio::task::JoinHandle<()>,
}

impl Link {
    /// Listens on a free loopback port; `serve` gets each connection that presents the token, on
    /// a task of its own, with the token line already read.
    pub async fn open<F, Fut>(serve: F) -> std::io::Result<Self>
    where
        F: Fn(BufReader<OwnedReadHalf>, OwnedWriteHalf) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let token = new_token()?;
        let expected = token.clone();
        let serve = std::sync::Arc::new(serve);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let expected = expected.clone();
                let serve = std::sync::Arc::clone(&serve);
                tokio::spawn(async move {
                    let (read, write) = stream.into_split();
                    let mut read = BufReader::new(read);
                    if presented(&mut read, &expected).await {
                        serve(read, write).await;
                    }
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
        .map_err(|_| std::io::Error::other("no randomness for the link's token"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether the connection's first line, within [`HELLO`], is the token.
async fn presented(read: &mut BufReader<OwnedReadHalf>, expected: &str) -> bool {
    let mut hello = Vec::new();
    let read = tokio::time::timeout(HELLO, async {
        let mut limited = (&mut *read).take(256);
        limited.read_until(b'\n', &mut hello).await
    })
    .await;
    let hello = String::from_utf8_lossy(&hello);
    // Compared as hashes: how long a comparison takes says nothing about the token.
    matches!(read, Ok(Ok(_)))
        && crate::digest::Digest::of(hello.trim_end().as_bytes())
            == crate::digest::Digest::of(expected.as_bytes())
}

/// The token in the variable `env`, which Reins sets for an agent it starts.
pub fn token_from(env: &str) -> Result<String, String> {
    std::env::var(env).map_err(|_| format!("{env} is not set: Reins sets it for an agent it starts"))
}

/// Connects to the link on `port` and presents `token`; `what` names the link in errors
/// ("Reins' memory link").
pub async fn connect(port: u16, token: &str, what: &str) -> Result<TcpStream, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot reach {what} on port {port}: {e}"))?;
    stream
        .write_all(format!("{token}\n").as_bytes())
        .await
        .map_err(|e| format!("{what} closed: {e}"))?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt as _;

    use super::*;

    async fn echo_link() -> Link {
        Link::open(|mut read, mut write| async move {
            let mut line = String::new();
            let _ = read.read_line(&mut line).await;
            let _ = write.write_all(line.as_bytes()).await;
        })
        .await
        .expect("a loopback port")
    }

    async fn answer(port: u16, hello: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
        stream
            .write_all(format!("{hello}\nping\n").as_bytes())
            .await
            .expect("write");
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out).await;
        out
    }

    #[tokio::test]
    async fn only_a_connection_with_the_token_is_served() {
        let link = echo_link().await;
        assert_eq!(answer(link.port, &link.token).await, "ping\n");
        assert_eq!(answer(link.port, "not-the-token").await, "");
        assert_eq!(answer(link.port, "").await, "");
        assert_eq!(link.token.len(), 48);
        assert_ne!(link.token, echo_link().await.token);
    }

    #[tokio::test]
    async fn a_dropped_link_listens_no_more() {
        let port = echo_link().await.port;
        // The listener goes with its task, which ends at its next poll.
        let mut refused = false;
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", port)).await.is_err() {
                refused = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(refused, "port {port} still answers");
    }
}
