//! Reins' hook for a confined headless Claude Code. The hook judges each tool call against Reins'
//! store, which the sandbox hides; so the hook Claude Code runs inside it
//! (`reins hook claude-code --headless --link PORT`) only carries its input over a link
//! ([`crate::contain::link`]) to the Reins that started Claude Code, which runs the real hook
//! outside the sandbox, with its own data dir and policy, and sends back what it printed and how
//! it exited. Every failure on the way blocks the call, as the hook itself does.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::contain::link::Link;

/// The variable that hands the hook inside the sandbox its token.
pub const TOKEN_ENV: &str = "REINS_HOOK_TOKEN";

/// What the real hook did with one call.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// Its exit status: 0 answered, 2 blocked.
    pub status: u8,
    pub stdout: String,
    pub stderr: String,
}

/// Claude Code's exit status for "block this call".
pub const BLOCK: u8 = 2;

/// The line a blocking hook writes to stderr, which Claude Code shows the model.
pub fn blocked_said(why: &str) -> String {
    format!("Reins blocked this tool call: {}", why.replace('\n', " "))
}

/// Listens for hook calls, and runs `argv` (the real hook, outside the sandbox) for each with
/// `env` set, its input on stdin.
pub async fn open(argv: Vec<String>, env: Vec<(String, String)>) -> std::io::Result<Link> {
    let job = std::sync::Arc::new((argv, env));
    Link::open(move |mut read, mut write| {
        let job = std::sync::Arc::clone(&job);
        async move {
            let mut input = Vec::new();
            let limit = super::hook::MAX_INPUT_BYTES as u64 + 1;
            let reply = match (&mut read).take(limit).read_to_end(&mut input).await {
                Ok(_) => run(&job.0, &job.1, input).await,
                Err(e) => blocked(&format!("cannot read the hook's input: {e}")),
            };
            let line = serde_json::to_string(&reply).unwrap_or_default();
            let _ = write.write_all(line.as_bytes()).await;
            let _ = write.shutdown().await;
        }
    })
    .await
}

fn blocked(why: &str) -> Reply {
    Reply {
        status: BLOCK,
        stdout: String::new(),
        stderr: format!("{}\n", blocked_said(why)),
    }
}

/// Runs the real hook on `input`, for as long as Claude Code waits for a hook at most. It is Reins'
/// own program, started unconfined on purpose: it is the part of Reins that reads the store.
async fn run(argv: &[String], env: &[(String, String)], input: Vec<u8>) -> Reply {
    let Some((program, args)) = argv.split_first() else {
        return blocked("the hook's command is empty");
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => return blocked(&format!("cannot start `{program}`: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that stops reading early answers anyway; what it said is what counts.
        let _ = stdin.write_all(&input).await;
    }
    let limit = std::time::Duration::from_secs(super::settings::TIMEOUT_SECS);
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Ok(Ok(out)) => Reply {
            status: match out.status.code() {
                Some(0) => 0,
                Some(c) => u8::try_from(c).unwrap_or(BLOCK),
                None => BLOCK,
            },
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        },
        Ok(Err(e)) => blocked(&format!("the hook failed: {e}")),
        Err(_) => blocked("the hook did not answer in time"),
    }
}

/// Inside the sandbox: carries one hook call (`input`) to the link on `port`, presenting `token`,
/// and returns what the real hook did. Opens nothing of Reins' own.
pub async fn ask(port: u16, token: &str, input: &str) -> Result<Reply, String> {
    let stream = crate::contain::link::connect(port, token, "Reins' hook link").await?;
    let (from, mut to) = stream.into_split();
    to.write_all(input.as_bytes())
        .await
        .map_err(|e| format!("Reins' hook link closed: {e}"))?;
    to.shutdown()
        .await
        .map_err(|e| format!("Reins' hook link closed: {e}"))?;
    let mut answer = Vec::new();
    from.take(2 * super::hook::MAX_INPUT_BYTES as u64)
        .read_to_end(&mut answer)
        .await
        .map_err(|e| format!("Reins' hook link closed: {e}"))?;
    serde_json::from_slice(&answer)
        .map_err(|e| format!("Reins' hook link answered something else ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), script.into()]
    }

    async fn ask_with(link: &Link, input: &str) -> Result<Reply, String> {
        ask(link.port, &link.token, input).await
    }

    #[tokio::test]
    async fn the_real_hook_gets_the_input_and_its_answer_comes_back() {
        let link = open(
            sh(r#"read -r line; echo "{\"seen\":\"$line\",\"session\":\"$S\"}"; echo warned >&2; exit 0"#),
            vec![("S".into(), "abc".into())],
        )
        .await
        .expect("a link");
        let reply = ask_with(&link, "hello\n").await.expect("a reply");
        assert_eq!(reply.status, 0);
        assert_eq!(reply.stdout.trim(), r#"{"seen":"hello","session":"abc"}"#);
        assert_eq!(reply.stderr.trim(), "warned");
    }

    #[tokio::test]
    async fn a_hook_that_blocks_or_cannot_start_blocks_the_call() {
        let link = open(sh("cat >/dev/null; echo no >&2; exit 2"), Vec::new())
            .await
            .expect("a link");
        assert_eq!(ask_with(&link, "x").await.map(|r| r.status), Ok(2));
        let link = open(vec!["/nonexistent/reins".into()], Vec::new())
            .await
            .expect("a link");
        let reply = ask_with(&link, "x").await.expect("a reply");
        assert_eq!(reply.status, 2);
        assert!(reply.stderr.contains("cannot start"), "{}", reply.stderr);
    }

    #[tokio::test]
    async fn without_the_token_nothing_is_run() {
        let dir = tempfile::tempdir().expect("a dir");
        let marker = dir.path().join("ran");
        let link = open(sh(&format!("touch {}", marker.display())), Vec::new())
            .await
            .expect("a link");
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", link.port))
            .await
            .expect("connect");
        stream.write_all(b"wrong-token\n{}").await.expect("write");
        stream.shutdown().await.expect("shutdown");
        let mut out = Vec::new();
        let _ = stream.read_to_end(&mut out).await;
        assert!(out.is_empty());
        assert!(!marker.exists(), "the hook ran without the token");
    }
}
