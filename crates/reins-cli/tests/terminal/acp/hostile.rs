//! A hostile ACP agent (`tests/fixtures/hostile_agent.py`) that never asks and never reports: each
//! of its effects is tried by its own process, and the kernel stops every one. The run says what
//! was blocked, and the audit log says how the agent ran.

use std::io::Read as _;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use super::common::{text, Cli};

struct Scene {
    cli: Cli,
    policy: std::path::PathBuf,
    listener: TcpListener,
}

impl Scene {
    fn new() -> anyhow::Result<Self> {
        let cli = Cli::new()?;
        let home = cli.tmp.path().join("home");
        std::fs::create_dir_all(home.join(".ssh"))?;
        std::fs::create_dir_all(home.join(".aws"))?;
        std::fs::write(
            home.join(".ssh/authorized_keys"),
            "ssh-ed25519 AAAAmine me\n",
        )?;
        std::fs::write(
            home.join(".aws/credentials"),
            "[default]\naws_secret_access_key = hostile-must-not-read\n",
        )?;
        std::fs::create_dir_all(cli.ws().join(".git/hooks"))?;
        let config = cli.tmp.path().join("config");
        std::fs::create_dir_all(&config)?;
        let policy = config.join("policy.toml");
        std::fs::write(&policy, "# the person's rules\n")?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        Ok(Self {
            cli,
            policy,
            listener,
        })
    }

    /// `reins run --acp` with the hostile agent, waited for; its output.
    fn run(&self, extra: &[&str]) -> anyhow::Result<(Option<i32>, String)> {
        let agent = shell_words::join([
            "python3".to_owned(),
            reins_tests::repo_root()
                .join("tests/fixtures/hostile_agent.py")
                .display()
                .to_string(),
            self.policy.display().to_string(),
            self.listener.local_addr()?.port().to_string(),
        ]);
        let out = super::bounded(
            super::agent_cmd(&self.cli)
                .env("REINS_POLICY", &self.policy)
                .args(["run", "--acp", "tidy up the project", "--agent", &agent])
                .args(extra)
                .arg("--workspace")
                .arg(self.cli.ws()),
        )?;
        // What the agent printed, for a failure's message.
        let mut said = text(&out);
        if let Ok(logs) = std::fs::read_dir(self.cli.data().join("agent-logs")) {
            for log in logs.flatten() {
                said.push_str(&std::fs::read_to_string(log.path()).unwrap_or_default());
            }
        }
        Ok((out.status.code(), said))
    }

    fn connections(&self) -> usize {
        let mut n = 0;
        while let Ok((mut s, _)) = self.listener.accept() {
            let mut got = String::new();
            let _ = s.read_to_string(&mut got);
            n += 1;
        }
        n
    }

    fn blocked(&self) -> anyhow::Result<String> {
        let page = self.cli.json(&["audit", "list", "--limit", "500"])?;
        Ok(page["events"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter(|e| e["kind"] == "agent.blocked")
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

/// The process id the agent's message gave for its daemon, if it started one.
fn daemon(said: &str) -> Option<i32> {
    said.lines()
        .find_map(|l| l.trim().strip_prefix("daemon: ok pid="))
        .and_then(|p| p.trim().parse().ok())
}

fn gone_within(pid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie nobody waits for any more.
        if state.is_empty() || state.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn every_effect_of_an_agent_that_asks_nothing_is_prevented_and_said() -> anyhow::Result<()> {
    let scene = Scene::new()?;
    let (code, said) = scene.run(&[])?;
    assert_eq!(code, Some(0), "{said}");
    let ws = scene.cli.ws();
    let home = scene.cli.tmp.path().join("home");
    assert!(!ws.join("NOTES.md").exists(), "{said}");
    assert!(!ws.join(".git/hooks/pre-commit").exists(), "{said}");
    assert_eq!(
        std::fs::read_to_string(home.join(".ssh/authorized_keys"))?,
        "ssh-ed25519 AAAAmine me\n"
    );
    assert!(!said.contains("hostile-must-not-read"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&scene.policy)?,
        "# the person's rules\n"
    );
    assert_eq!(scene.connections(), 0, "{said}");
    // A daemon it started (inside its sandbox, so no further) does not outlive the run.
    if let Some(pid) = daemon(&said) {
        assert!(
            gone_within(pid, Duration::from_secs(5)),
            "{pid} outlived the run"
        );
    }
    let blocked = scene.blocked()?;
    for what in [
        "NOTES.md",
        "pre-commit",
        "authorized_keys",
        "credentials",
        "policy.toml",
    ] {
        assert!(blocked.contains(what), "{what} not said blocked: {blocked}");
    }
    let id = scene.cli.only_run()?;
    let show = scene.cli.json(&["show", &id])?;
    let agent = &show["run"]["compat"]["externalAgent"];
    let how = agent["confinement"].as_str().unwrap_or_default();
    assert!(how.starts_with("confined (Landlock ABI"), "{show}");
    assert!(how.contains("writes only its own state"), "{how}");
    assert_eq!(
        agent["profileSha256"].as_str().map(str::len),
        Some(64),
        "{show}"
    );
    Ok(())
}

#[test]
fn an_agent_let_write_the_workspace_is_stopped_by_what_it_changed_unasked_and_it_can_be_undone(
) -> anyhow::Result<()> {
    let scene = Scene::new()?;
    let ws = scene.cli.ws();
    std::fs::write(ws.join("NOTES.md"), "my own notes\n")?;
    let (code, said) = scene.run(&["--agent-may-write", &ws.display().to_string()])?;
    // The kernel let it write the workspace, never the protected paths nor the network.
    assert_eq!(
        scene.cli.read("NOTES.md")?,
        "written without asking\n",
        "{said}"
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists(), "{said}");
    assert_eq!(scene.connections(), 0, "{said}");
    let id = scene.cli.only_run()?;
    let show = scene.cli.json(&["show", &id])?;
    let how = show["run"]["compat"]["externalAgent"]["confinement"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(how.contains("writes inside the workspace"), "{how}");
    assert!(scene.blocked()?.contains("pre-commit"));
    // Nobody approved the write: the run stopped on it rather than ending `succeeded`.
    assert_eq!(code, Some(3), "{said}");
    assert_eq!(show["run"]["state"], "suspended", "{show}");
    assert!(
        said.contains("without asking Reins: NOTES.md (changed)"),
        "{said}"
    );
    let caught = scene.cli.events("workspace.changed_unasked")?;
    assert_eq!(caught.len(), 1, "{caught:?}");
    let payload = &caught[0];
    assert_eq!(payload["changes"][0]["path"], "NOTES.md", "{payload}");
    assert_eq!(payload["changes"][0]["kind"], "modified", "{payload}");
    assert_eq!(payload["changes"][0]["undoable"], true, "{payload}");
    let undo = payload["undo"].as_i64().unwrap_or_default().to_string();
    // The person sees the change as a diff, then undoes it: the file holds their notes again.
    let look = text(
        &scene
            .cli
            .run(&["rollback", &id, "--to", &undo, "--dry-run"])?,
    );
    assert!(
        look.contains("-written without asking") && look.contains("+my own notes"),
        "{look}"
    );
    let done = scene.cli.run(&["rollback", &id, "--to", &undo])?;
    assert!(done.status.success(), "{}", text(&done));
    assert_eq!(scene.cli.read("NOTES.md")?, "my own notes\n");
    Ok(())
}
