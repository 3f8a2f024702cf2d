//! The real OS keyring (Secret Service over D-Bus). Ignored in a plain `cargo test`: it needs a
//! session bus with an unlocked keyring, which `scripts/test` provides (`dbus-run-session` +
//! `gnome-keyring-daemon --unlock`) and then runs it with `--ignored`. There it fails, never skips,
//! when the keyring is missing.

use crate::common;

use common::{text, Cli};
use reins_tests::llm_setup::files_containing;
use reins_tests::mock_llm::{self, MockLlm};

fn set_key(cli: &Cli, name: &str, key: &str) -> anyhow::Result<std::process::Output> {
    let mut child = cli
        .cmd()
        .args(["keys", "set", name])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write as _;
        stdin.write_all(key.as_bytes())?;
    }
    Ok(child.wait_with_output()?)
}

#[test]
#[ignore = "needs a Secret Service on the session bus: scripts/test runs it under dbus-run-session"]
fn a_key_lives_in_the_os_keyring_and_only_there() -> anyhow::Result<()> {
    anyhow::ensure!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run this under dbus-run-session with gnome-keyring-daemon --unlock (see scripts/test)"
    );
    let cli = Cli::new()?;
    let name = format!("reins-it-{}", std::process::id());
    let key = "sk-it-Mv5Lp8Qr2Ws7Ye4Tu1Io9Pa3Sd6Fg0Hj";
    let out = set_key(&cli, &name, key)?;
    assert!(out.status.success(), "keys set: {}", text(&out));
    assert!(!text(&out).contains(key));
    let status = cli.json(&["keys", "status", &name])?;
    assert_eq!(status[0]["set"], true, "{status}");

    let mock = MockLlm::start(vec![mock_llm::text("done", 50)])?;
    let out = cli
        .cmd()
        .args(["run", "--llm", "say done", "--workspace"])
        .arg(cli.ws())
        .args([
            "--base-url",
            &mock.base_url(),
            "--model",
            "m",
            "--key",
            &name,
        ])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        mock.seen()[0].authorization.as_deref(),
        Some(format!("Bearer {key}").as_str()),
        "the key reached the server, in the header"
    );
    assert!(!text(&out).contains(key));
    let status = cli.json(&["keys", "status"])?;
    assert_eq!(
        status[0]["name"],
        name.as_str(),
        "names in use are listed: {status}"
    );
    for dir in [cli.data(), cli.ws(), cli.tmp.path().join("config")] {
        let found = files_containing(&dir, key.as_bytes())?;
        assert!(found.is_empty(), "the key is in {found:?}");
    }
    let out = cli.cmd().args(["keys", "delete", &name]).output()?;
    assert!(text(&out).contains("deleted key"), "{}", text(&out));
    assert_eq!(cli.json(&["keys", "status", &name])?[0]["set"], false);
    Ok(())
}

#[test]
#[ignore = "needs a Secret Service on the session bus: scripts/test runs it under dbus-run-session"]
fn a_secret_sealed_at_rest_is_masked_on_the_card_and_whole_on_request() -> anyhow::Result<()> {
    anyhow::ensure!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run this under dbus-run-session with gnome-keyring-daemon --unlock (see scripts/test)"
    );
    let cli = Cli::new()?;
    let secret = "Tr0ub4dorCARD8";
    let plan = cli.tmp.path().join("p.toml");
    std::fs::write(
        &plan,
        format!("name = \"p\"\ngoal = \"g\"\n[[steps]]\ntool = \"shell.exec\"\nargs = {{ command = \"mysql -u root --password {secret} -h db app\" }}\n"),
    )?;
    let out = cli
        .strict_cmd()
        .args(["run", "--plan", &plan.to_string_lossy(), "--no-wait"])
        .args(["--workspace", &cli.ws().to_string_lossy()])
        .output()?;
    assert_eq!(
        out.status.code(),
        Some(3),
        "waits for review: {}",
        text(&out)
    );
    let pending = cli.json(&["approvals"])?;
    let id = pending[0]["id"].as_str().unwrap_or_default().to_owned();
    let card = cli.strict_cmd().args(["approval", "show", &id]).output()?;
    assert!(card.status.success(), "{}", text(&card));
    assert!(
        !text(&card).contains(secret),
        "the card masks it: {}",
        text(&card)
    );
    let listed = cli.json(&["approval", "show", &id])?;
    assert!(
        !listed.to_string().contains(secret),
        "so does the view: {listed}"
    );
    assert_eq!(
        listed["subject"], "mysql -u root --password [sealed secret] -h db app",
        "and the list's subject"
    );
    let list = cli.strict_cmd().arg("approvals").output()?;
    assert!(!text(&list).contains(secret), "{}", text(&list));
    let whole = cli.json(&["approval", "show", &id, "--action"])?;
    assert_eq!(
        whole["args"]["command"],
        format!("mysql -u root --password {secret} -h db app"),
        "--action shows exactly what runs"
    );
    let found = files_containing(&cli.data(), secret.as_bytes())?;
    assert!(found.is_empty(), "sealed at rest, but found in {found:?}");
    Ok(())
}

/// An ACP agent that will not open a session until signed in is signed in with the method that
/// names the variable Reins sets from the keyring; the key reaches it only in its environment.
#[test]
#[ignore = "needs a Secret Service on the session bus: scripts/test runs it under dbus-run-session"]
fn an_acp_agent_that_requires_it_is_signed_in_with_a_key_from_the_keyring() -> anyhow::Result<()> {
    anyhow::ensure!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run this under dbus-run-session with gnome-keyring-daemon --unlock (see scripts/test)"
    );
    let cli = Cli::new()?;
    let name = format!("reins-acp-{}", std::process::id());
    let key = "sk-acp-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2";
    let script = cli.tmp.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({
            "requireAuth": "OPENAI_API_KEY",
            "authMethods": [
                {"id": "chatgpt", "name": "Login with ChatGPT"},
                {"type": "env_var", "id": "openai-api-key", "name": "Use OPENAI_API_KEY",
                 "vars": [{"name": "OPENAI_API_KEY"}]},
            ],
            "turns": [[{"say": "Signed in and done."}]],
        })
        .to_string(),
    )?;
    // The agent's log is the one place besides its temp dir it may write.
    let log_dir = cli.tmp.path().join("agent");
    std::fs::create_dir_all(&log_dir)?;
    let log = log_dir.join("agent.log");
    let agent = shell_words::join([
        "python3".to_owned(),
        common::repo_root()
            .join("tests/fixtures/acp_agent.py")
            .display()
            .to_string(),
        script.display().to_string(),
        log.display().to_string(),
    ]);
    let run = |env: &str| {
        cli.strict_cmd()
            .args(["run", "--acp", "Sign in", "--agent", &agent, "--env", env])
            .arg("--agent-may-write")
            .arg(&log_dir)
            .arg("--workspace")
            .arg(cli.ws())
            .output()
    };
    // No such key yet: refused before anything starts, saying how to store it.
    let out = run(&format!("OPENAI_API_KEY={name}"))?;
    assert!(!out.status.success());
    assert!(text(&out).contains("reins keys set"), "{}", text(&out));

    let out = set_key(&cli, &name, key)?;
    assert!(out.status.success(), "keys set: {}", text(&out));
    let out = run(&format!("OPENAI_API_KEY={name}"))?;
    assert!(out.status.success(), "{}", text(&out));
    let received = std::fs::read_to_string(&log)?;
    let signed_in = received
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|m| m["method"] == "authenticate" && m["params"]["methodId"] == "openai-api-key");
    assert!(signed_in, "{received}");
    assert!(
        !received.contains(key),
        "the key is never sent over the protocol"
    );
    // Nothing Reins stored or logged holds the key.
    assert!(files_containing(&cli.data(), key.as_bytes())?.is_empty());
    Ok(())
}

/// The real Codex (`codex-acp`, pinned by `scripts/agents`) opens no session until it is signed
/// in. Under Reins it is signed in with the key from the keyring, put in its asking mode
/// (`read-only`), and its first model request carries that key. (The scripted server answers it
/// 400: Codex speaks OpenAI's Responses API, which the server does not, so the run stops there,
/// suspended with the model's refusal.)
#[test]
#[ignore = "needs a Secret Service on the session bus: scripts/test runs it under dbus-run-session"]
fn codex_is_signed_in_with_the_key_from_the_keyring_and_asks_in_its_read_only_mode(
) -> anyhow::Result<()> {
    anyhow::ensure!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run this under dbus-run-session with gnome-keyring-daemon --unlock (see scripts/test)"
    );
    let cli = Cli::new()?;
    let name = format!("reins-codex-{}", std::process::id());
    let key = "sk-codex-Zx8Cv6Bn4Mq2Wl0Ek7Rj5Th3Yg1Uf9";
    let out = set_key(&cli, &name, key)?;
    assert!(out.status.success(), "keys set: {}", text(&out));
    let mock = MockLlm::start(vec![mock_llm::status(400, None)])?;
    let home = cli.tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    let codex = crate::acp::agents_bin("codex-acp")?.join("codex-acp");
    let agent = shell_words::join([
        codex.display().to_string(),
        "-c".into(),
        r#"model_provider="mock""#.into(),
        "-c".into(),
        r#"model_providers.mock.name="mock""#.into(),
        "-c".into(),
        format!(r#"model_providers.mock.base_url="{}""#, mock.base_url()),
        "-c".into(),
        r#"model_providers.mock.env_key="OPENAI_API_KEY""#.into(),
        "-c".into(),
        r#"model="mock-model""#.into(),
    ]);
    let out = cli
        .strict_cmd()
        .env("HOME", &home)
        .args(["run", "--acp", "Say hello", "--agent", &agent])
        .args(["--env", &format!("OPENAI_API_KEY={name}"), "--workspace"])
        .arg(cli.ws())
        .output()?;
    let said = text(&out);
    assert_eq!(
        out.status.code(),
        Some(3),
        "suspended on the model's 400: {said}"
    );
    let seen = mock.seen();
    assert!(!seen.is_empty(), "Codex never asked the model: {said}");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {key}").as_str()),
        "signed in with the keyring's key"
    );
    let id = cli.only_run()?;
    let show = cli.json(&["show", &id])?;
    let agent = &show["run"]["compat"]["externalAgent"];
    assert_eq!(agent["name"], "codex-acp", "{show}");
    assert_eq!(agent["mode"], "read-only", "{show}");
    let found = files_containing(&cli.data(), key.as_bytes())?;
    assert!(found.is_empty(), "the key is on disk in {found:?}");
    Ok(())
}

#[test]
#[ignore = "needs a Secret Service on the session bus: scripts/test runs it under dbus-run-session"]
fn a_headless_claude_code_signs_in_with_the_keyrings_key_and_it_stays_off_disk(
) -> anyhow::Result<()> {
    use reins_tests::mock_anthropic::{say, MockAnthropic};
    anyhow::ensure!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run this under dbus-run-session (see scripts/test)"
    );
    let cli = Cli::new()?;
    let name = format!("reins-anthropic-{}", std::process::id());
    let key = "sk-ant-it-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz";
    let out = set_key(&cli, &name, key)?;
    assert!(out.status.success(), "keys set: {}", text(&out));
    let mock = MockAnthropic::start(vec![say("Nothing to do.")])?;
    let home = cli.tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    let out = cli
        .strict_cmd()
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .args(["run", "--claude", "Say hello", "--claude-program"])
        .arg(crate::acp::agents_bin("claude")?.join("claude"))
        .args(["--env", &format!("ANTHROPIC_API_KEY={name}")])
        .args([
            "--pass-env",
            "ANTHROPIC_BASE_URL",
            "--pass-env",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        ])
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains(key));
    let keys = mock.api_keys();
    assert!(
        !keys.is_empty(),
        "Claude Code never asked the model: {}",
        text(&out)
    );
    assert!(keys.iter().all(|k| k.as_deref() == Some(key)), "{keys:?}");
    let found = files_containing(&cli.data(), key.as_bytes())?;
    assert!(found.is_empty(), "the key is on disk in {found:?}");
    Ok(())
}

#[test]
#[ignore = "needs a Secret Service on the session bus: scripts/test runs it under dbus-run-session"]
fn the_serve_certificate_key_is_kept_in_the_keyring_and_nowhere_on_disk() -> anyhow::Result<()> {
    anyhow::ensure!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no session bus: run this under dbus-run-session with gnome-keyring-daemon --unlock (see scripts/test)"
    );
    let cli = Cli::new()?;
    let fingerprint = |cli: &Cli| -> anyhow::Result<String> {
        let server = crate::serve::Server::start(cli, &["--tls"])?;
        let pairing = cli.json(&["serve", "pair", "--name", "tablet"])?;
        drop(server);
        Ok(pairing["fingerprint"]
            .as_str()
            .unwrap_or_default()
            .to_owned())
    };
    let first = fingerprint(&cli)?;
    assert_eq!(first.len(), 95, "{first}");
    assert_eq!(
        fingerprint(&cli)?,
        first,
        "the same certificate on the next start"
    );
    assert!(cli.data().join("serve/cert.pem").is_file());
    assert!(
        files_containing(&cli.data(), b"PRIVATE KEY")?.is_empty(),
        "the certificate's private key is not on disk"
    );
    Ok(())
}
