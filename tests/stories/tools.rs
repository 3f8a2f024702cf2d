//! shell.exec and http.fetch under the default policy, for real: what a person approves is what runs,
//! with a fixed environment and a timeout; requests to this machine need a review, metadata and
//! `file://` are refused, a redirect to a private address is refused; huge and hidden-character
//! file changes preview safely.

use reins_core::api::{DriveOutcome, Reins, Risk, RunId, RunState, Silent, StepStatus};
use reins_tests::review::{approve_once, pending, succeeded};
use reins_tests::{step, Sandbox};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A plan of `steps` (TOML) under a placeholder name and goal.
fn steps(steps: &str) -> String {
    format!("name = \"t\"\ngoal = \"g\"\n{steps}")
}

/// Drives, approves whatever is pending, drives again; returns step 1's status and result.
async fn approve_and_run(engine: &Reins, run: RunId) -> anyhow::Result<(String, String)> {
    let first = engine.drive(run, &Silent).await?;
    anyhow::ensure!(
        matches!(
            first,
            DriveOutcome::NeedsHuman {
                state: RunState::AwaitingApproval,
                ..
            }
        ),
        "{first:?}"
    );
    let a = pending(engine, run).await?;
    engine.approve(&a.id, approve_once()).await?;
    engine.drive(run, &Silent).await?;
    let s = step(engine, run, 1)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no step"))?;
    Ok((s.status.to_string(), s.result.unwrap_or_default()))
}

#[tokio::test]
async fn a_command_runs_with_a_fixed_environment_and_its_output_captured() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    std::env::set_var("REINS_TEST_SECRET_KEY", "sk-should-not-leak");
    let run = sb.start(
        &engine,
        &steps("[[steps]]\ntool = \"shell.exec\"\nargs = { command = \"echo hello > out.txt && env\" }\n"),
    )
    .await?;
    let (status, result) = approve_and_run(&engine, run).await?;
    assert_eq!(status, "done", "{result}");
    assert_eq!(sb.read("out.txt")?, "hello\n");
    assert!(result.contains("exit code 0"), "{result}");
    assert!(
        !result.contains("sk-should-not-leak"),
        "the environment is not passed on: {result}"
    );
    assert!(result.contains("PATH="), "{result}");
    Ok(())
}

#[tokio::test]
async fn a_command_past_its_timeout_is_stopped() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let run = sb.start(
        &engine,
        &steps("[[steps]]\ntool = \"shell.exec\"\nexpect = \"error\"\nargs = { argv = [\"sleep\", \"30\"], timeout_s = 1 }\n"),
    )
    .await?;
    let began = std::time::Instant::now();
    let (status, result) = approve_and_run(&engine, run).await?;
    assert!(began.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(status, "failed");
    assert!(result.contains("timed out"), "{result}");
    Ok(())
}

#[tokio::test]
async fn a_command_that_runs_reins_is_high_risk() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let run = sb.start(
        &engine,
        &steps("[[steps]]\ntool = \"shell.exec\"\nargs = { command = \"reins approve 0195 --scope always\" }\n"),
    )
    .await?;
    engine.drive(run, &Silent).await?;
    let a = pending(&engine, run).await?;
    assert_eq!(a.risk, Risk::High);
    assert!(
        a.reasons.join("; ").contains("Reins itself"),
        "{:?}",
        a.reasons
    );
    assert!(a.preview.contains("[high] reins approve"), "{}", a.preview);
    Ok(())
}

/// A one-shot HTTP server on 127.0.0.1 answering every request with `response`.
async fn serve(response: &'static str) -> anyhow::Result<u16> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let _ = sock.write_all(response.as_bytes()).await;
            let _ = sock.shutdown().await;
        }
    });
    Ok(port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_this_machine_are_reviewed_and_redirects_rechecked() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let ok = serve("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello").await?;
    let run = sb.start(
        &engine,
        &steps(&format!("[[steps]]\ntool = \"http.fetch\"\nargs = {{ url = \"http://127.0.0.1:{ok}/status\" }}\n")),
    )
    .await?;
    engine.drive(run, &Silent).await?;
    let a = pending(&engine, run).await?;
    assert_eq!(a.risk, Risk::High);
    assert!(a.reasons.join("; ").contains("loopback"), "{:?}", a.reasons);
    assert!(
        a.reasons.join("; ").contains("plain http"),
        "{:?}",
        a.reasons
    );
    engine.approve(&a.id, approve_once()).await?;
    engine.drive(run, &Silent).await?;
    let s = step(&engine, run, 1)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no step"))?;
    assert_eq!(s.status, StepStatus::Done);
    assert!(s
        .result
        .is_some_and(|r| r.contains("200 OK") && r.ends_with("hello")));

    let redirect = serve("HTTP/1.1 302 Found\r\nlocation: http://10.11.12.13/internal\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await?;
    let run2 = sb.start(
        &engine,
        &steps(&format!("[[steps]]\ntool = \"http.fetch\"\nexpect = \"error\"\nargs = {{ url = \"http://127.0.0.1:{redirect}/\" }}\n")),
    )
    .await?;
    let (status, result) = approve_and_run(&engine, run2).await?;
    assert_eq!(status, "failed");
    assert!(
        result.contains("refused") && result.contains("10.11.12.13"),
        "{result}"
    );
    Ok(())
}

#[tokio::test]
async fn metadata_addresses_and_file_urls_are_refused_without_a_review() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    let run = sb
        .start(
            &engine,
            &steps(
                r#"
[[steps]]
tool = "http.fetch"
expect = "error"
args = { url = "http://169.254.169.254/latest/meta-data/iam/" }
[[steps]]
tool = "http.fetch"
expect = "error"
args = { url = "file:///etc/passwd" }
"#,
            ),
        )
        .await?;
    let outcome = engine.drive(run, &Silent).await?;
    assert!(succeeded(&outcome), "{outcome:?}");
    let rows = engine.run_detail(run).await?.steps;
    assert_eq!(
        rows.iter().map(|r| r.status.as_str()).collect::<Vec<_>>(),
        ["denied", "denied"]
    );
    assert!(rows[0]
        .result
        .as_deref()
        .is_some_and(|r| r.contains("metadata")));
    assert!(engine.approvals(None, Some(run)).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn protected_paths_hidden_characters_and_huge_files_preview_safely() -> anyhow::Result<()> {
    let sb = Sandbox::new()?;
    let engine = sb.with_defaults().await?;
    // A 100 MB file being replaced: capped preview, full hashes.
    let big = vec![b'a'; 100 * 1024 * 1024];
    std::fs::write(sb.ws().join("big.log"), &big)?;
    let cases = [
        (
            "fs.write",
            r#"{ path = ".git/hooks/pre-commit", content = "curl x | sh\n" }"#,
            "git hook",
        ),
        (
            "fs.write",
            r#"{ path = ".GIT/config", content = "[core]\n" }"#,
            "git config",
        ),
        (
            "fs.write",
            r#"{ path = ".vscode/settings.json", content = "{}" }"#,
            "editor config",
        ),
        (
            "fs.write",
            "{ path = \"notes.txt\", content = \"safe\u{202e}txt.exe\\n\" }",
            "cannot see",
        ),
        (
            "shell.exec",
            r#"{ command = "sed -i s/a/b/ .git/config" }"#,
            "protected",
        ),
        (
            "fs.write",
            r#"{ path = "big.log", content = "small\n" }"#,
            "writes big.log",
        ),
    ];
    for (tool, args, why) in cases {
        let run = sb
            .start(
                &engine,
                &steps(&format!("[[steps]]\ntool = \"{tool}\"\nargs = {args}\n")),
            )
            .await?;
        let outcome = engine.drive(run, &Silent).await?;
        let a = pending(&engine, run)
            .await
            .map_err(|e| anyhow::anyhow!("{args}: {e}: {outcome:?}"))?;
        assert!(
            a.reasons.join("; ").contains(why),
            "{args}: {:?}",
            a.reasons
        );
        if why == "writes big.log" {
            assert!(
                a.preview.len() < 20_000,
                "capped: {} bytes",
                a.preview.len()
            );
            let full = reins_core::api::Digest::of(&big).to_string();
            assert!(
                a.preview.contains(&full),
                "the full hash of the old content"
            );
        } else {
            assert_eq!(a.risk, Risk::High, "{args}");
        }
        if why == "cannot see" {
            assert!(a.preview.contains("⟨U+202E⟩"), "{}", a.preview);
        }
        engine.reject(&a.id, "test", "user:test").await?;
    }
    Ok(())
}
