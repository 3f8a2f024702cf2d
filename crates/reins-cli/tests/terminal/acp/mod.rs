//! Real external agents under Reins over the Agent Client Protocol — Qwen Code and opencode, both
//! installed from npm by `scripts/agents` — driven offline by the scripted model server. Each
//! vendor's tool calls are scripted in its own tool names; everything else about a run is Reins'.

use crate::common;

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{text, Cli};
use reins_tests::mock_llm::{self, MockLlm, Reply};

mod budget;
mod hostile;
mod lifecycle;
mod opencode;
mod qwen;
mod staged;
mod watched;

/// Where `scripts/agents` installs the pinned agents.
pub(crate) fn agents_bin(program: &str) -> anyhow::Result<PathBuf> {
    let dir = match std::env::var_os("REINS_AGENTS_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var("HOME")?).join(".cache/reins-agents"),
    };
    let bin = dir.join("node_modules/.bin");
    anyhow::ensure!(
        bin.join(program).exists(),
        "{program} is not installed in {}: run scripts/agents (scripts/test does)",
        dir.display()
    );
    Ok(bin)
}

/// A fresh tool call id, as a model gives each call (agents refuse one they handled already).
fn call_id() -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    format!(
        "call_{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Vendor {
    Qwen,
    OpenCode,
}

impl Vendor {
    /// Prepares the agent's home in the sandbox and returns what `--agent` is given: Qwen Code's
    /// command line, or the name opencode was registered under (`reins agents add`).
    fn agent(self, cli: &Cli, mock: &MockLlm) -> anyhow::Result<String> {
        let home = cli.tmp.path().join("home");
        std::fs::create_dir_all(&home)?;
        match self {
            Vendor::Qwen => Ok(format!(
                "{} --acp --auth-type openai --openai-base-url {} --openai-api-key sk-test -m mock-model",
                agents_bin("qwen")?.join("qwen").display(),
                mock.base_url()
            )),
            Vendor::OpenCode => {
                // An OpenAI-compatible provider in opencode's own config file, as a user sets one.
                let config = home.join(".config/opencode");
                std::fs::create_dir_all(&config)?;
                let settings = serde_json::json!({
                    "$schema": "https://opencode.ai/config.json",
                    "provider": {"mock": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Mock",
                        "options": {"baseURL": mock.base_url(), "apiKey": "sk-test"},
                        "models": {"mock-model": {"name": "Mock model"}},
                    }},
                    "model": "mock/mock-model",
                    "share": "disabled",
                    "autoupdate": false,
                });
                std::fs::write(config.join("opencode.json"), settings.to_string())?;
                opencode_installed_its_plugin_types(&config)?;
                let program = agents_bin("opencode")?.join("opencode");
                // Registered once per sandbox; a second run reuses it.
                let listed = cli.json(&["agents", "list"])?;
                if listed.to_string().contains("\"opencode\"") {
                    return Ok("opencode".into());
                }
                let mut add = cli.strict_cmd();
                add.args(["agents", "add", "opencode"]);
                for var in OPENCODE_OFFLINE {
                    add.args(["--pass-env", var]);
                }
                let out = add
                    .arg("--")
                    .arg(&program)
                    .arg("acp")
                    .output()?;
                anyhow::ensure!(out.status.success(), "agents add: {}", text(&out));
                Ok("opencode".into())
            }
        }
    }

    /// The model's reply that has the agent write `content` to `rel`, in the agent's tool names.
    fn write(self, cli: &Cli, rel: &str, content: &str) -> Reply {
        let path = cli.ws().join(rel).display().to_string();
        let (tool, args) = match self {
            Vendor::Qwen => (
                "write_file",
                serde_json::json!({"file_path": path, "content": content}),
            ),
            Vendor::OpenCode => (
                "write",
                serde_json::json!({"filePath": path, "content": content}),
            ),
        };
        mock_llm::calls(
            "I will write the file.",
            &[(&call_id(), tool, &args.to_string())],
        )
    }

    /// The model's reply that has the agent run `command` with its own shell tool.
    fn shell(self, command: &str) -> Reply {
        let tool = match self {
            Vendor::Qwen => "run_shell_command",
            Vendor::OpenCode => "bash",
        };
        let args = serde_json::json!({"command": command, "description": "as asked"});
        mock_llm::calls("Running it.", &[("call_1", tool, &args.to_string())])
    }
}

/// `reins run --acp` in the background, with the agent's own home in the sandbox.
fn start(cli: &Cli, vendor: Vendor, mock: &MockLlm, goal: &str) -> anyhow::Result<Child> {
    let agent = vendor.agent(cli, mock)?;
    start_with(cli, &agent, goal)
}

fn start_with(cli: &Cli, agent: &str, goal: &str) -> anyhow::Result<Child> {
    start_in(cli, agent, goal, &cli.ws())
}

/// What opencode is told so that it starts offline: without these it fetches a model list and
/// its default plugins from the network at start, and where the network drops packets it waits
/// on them for as long as the test lets it.
const OPENCODE_OFFLINE: [&str; 3] = [
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_AUTOUPDATE",
];

/// At its first start opencode installs `@opencode-ai/plugin` from the npm registry into its
/// config directory, and its first turn waits for that install; where the registry is slow or
/// drops packets, the turn waits with it. This leaves what a finished install leaves behind (a
/// `node_modules` and a lock naming the package), which is all opencode checks.
fn opencode_installed_its_plugin_types(config: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(config.join("node_modules"))?;
    let lock = serde_json::json!({
        "lockfileVersion": 3,
        "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}},
    });
    std::fs::write(config.join("package-lock.json"), lock.to_string())?;
    Ok(())
}

/// How long one `reins` command that drives an agent may take before the test fails with what
/// it printed (Node starts slowly here; a healthy run takes seconds).
const AGENT_RUN: Duration = Duration::from_secs(150);

/// `reins` with the built-in policy, the sandbox's home for the agent, and opencode offline.
fn agent_cmd(cli: &Cli) -> std::process::Command {
    let mut c = cli.strict_cmd();
    c.env("HOME", cli.tmp.path().join("home"));
    for var in OPENCODE_OFFLINE {
        c.env(var, "1");
    }
    c
}

/// `cmd`'s output within [`AGENT_RUN`].
fn bounded(cmd: &mut std::process::Command) -> anyhow::Result<std::process::Output> {
    common::output_within(cmd, AGENT_RUN)
}

fn start_in(cli: &Cli, agent: &str, goal: &str, ws: &std::path::Path) -> anyhow::Result<Child> {
    Ok(agent_cmd(cli)
        .args(["run", "--acp", goal, "--agent", agent, "--workspace"])
        .arg(ws)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?)
}

/// The first pending approval, waited for up to two minutes (Node starts slowly here).
fn card(cli: &Cli, child: &mut Child) -> anyhow::Result<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let list = cli.json(&["approvals"])?;
        if let Some(first) = list.as_array().and_then(|l| l.first()) {
            let id = first["id"].as_str().unwrap_or_default().to_owned();
            return cli.json(&["approval", "show", &id]);
        }
        if let Some(status) = child.try_wait()? {
            let out = child
                .stderr
                .take()
                .map(std::io::read_to_string)
                .transpose()?;
            let stdout = child
                .stdout
                .take()
                .map(std::io::read_to_string)
                .transpose()?;
            let show = cli
                .run(&["show", &cli.only_run().unwrap_or_default()])
                .map(|o| text(&o))
                .unwrap_or_default();
            anyhow::bail!("reins exited ({status}) before any card: {out:?} {stdout:?}\n{show}");
        }
        anyhow::ensure!(Instant::now() < deadline, "no card after two minutes");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits for `reins` to exit; its exit code and output.
fn finish(mut child: Child) -> anyhow::Result<(Option<i32>, String)> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            child.kill()?;
            let out = child.wait_with_output()?;
            anyhow::bail!("reins still running after two minutes: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output()?;
    Ok((out.status.code(), text(&out)))
}

fn kinds(cli: &Cli) -> anyhow::Result<Vec<String>> {
    let page = cli.json(&["audit", "list", "--limit", "500"])?;
    Ok(page["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e["kind"].as_str().map(str::to_owned))
        .collect())
}

/// Whether any request the agent made asked the model to judge a command itself.
fn asked_its_own_classifier(mock: &MockLlm) -> bool {
    mock.seen()
        .iter()
        .any(|s| s.body.to_string().contains("respond_in_schema"))
}

/// Approves `card` and waits for the run: the write is on disk, once, with the events.
fn approve_and_check_the_write(
    cli: &Cli,
    child: Child,
    card: &serde_json::Value,
    rel: &str,
    content: &str,
) -> anyhow::Result<String> {
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli.strict_cmd().args(["approve", id]).output()?;
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(cli.read(rel)?, content);
    let kinds = kinds(cli)?;
    for kind in ["approval.approved", "agent.identified", "agent.reported"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} missing: {kinds:?}");
    }
    Ok(said)
}

/// A rejection with a reason leaves the file alone, and the agent's next model request says why.
fn reject_and_check_the_reason_is_heard(
    cli: &Cli,
    vendor: Vendor,
    mock: &MockLlm,
    rel: &str,
) -> anyhow::Result<()> {
    let mut child = start(cli, vendor, mock, "Write the notes")?;
    let card = card(cli, &mut child)?;
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli
        .strict_cmd()
        .args(["reject", id, "--reason", "keep notes in the README"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert!(!cli.ws().join(rel).exists());
    let seen = mock.seen();
    assert!(
        seen[1..]
            .iter()
            .any(|s| s.body.to_string().contains("keep notes in the README")),
        "the reason reaches the model: {:?}",
        seen.iter().map(|s| s.body.to_string()).collect::<Vec<_>>()
    );
    assert!(!asked_its_own_classifier(mock));
    Ok(())
}

/// A high-risk command is reviewed and rejected, and leaves no trace; then a low one a rule
/// allows runs without a card.
fn commands_are_judged_by_reins(vendor: Vendor) -> anyhow::Result<()> {
    let cli = Cli::new()?;
    std::fs::create_dir_all(cli.ws().join("build"))?;
    std::fs::write(cli.ws().join("build/keep.txt"), "kept\n")?;
    let mock = MockLlm::start(vec![
        vendor.shell("rm -rf build"),
        mock_llm::text("I did not remove it.", 8),
    ])?;
    let mut child = start(&cli, vendor, &mock, "Clean the build folder")?;
    let card = card(&cli, &mut child)?;
    assert_eq!(card["risk"], "high", "{card}");
    assert!(
        card["preview"]
            .as_str()
            .unwrap_or_default()
            .contains("rm -rf build"),
        "{card}"
    );
    let id = card["id"].as_str().unwrap_or_default();
    let out = cli
        .strict_cmd()
        .args(["reject", id, "--reason", "never delete build outputs"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = finish(child)?;
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(cli.read("build/keep.txt")?, "kept\n", "no trace");

    // A rule allows `touch`: the agent's command runs with no card.
    let policy = cli.tmp.path().join("allow-touch.toml");
    std::fs::write(
        &policy,
        "[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\nprogram = \"touch\"\nreason = \"harmless\"\n",
    )?;
    let mock = MockLlm::start(vec![
        vendor.shell("touch made-by-agent.txt"),
        mock_llm::text("Touched.", 8),
    ])?;
    let agent = vendor.agent(&cli, &mock)?;
    let out = bounded(
        agent_cmd(&cli)
            .env("REINS_POLICY", &policy)
            .args([
                "run",
                "--acp",
                "Touch a file",
                "--agent",
                &agent,
                "--workspace",
            ])
            .arg(cli.ws()),
    )?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        cli.ws().join("made-by-agent.txt").exists(),
        "{}",
        text(&out)
    );
    let all = cli.json(&["approvals", "--all"])?;
    assert_eq!(
        all.as_array().map(Vec::len),
        Some(1),
        "only the first card: {all}"
    );
    assert!(!asked_its_own_classifier(&mock));
    Ok(())
}
