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
    /// Reins itself runs as `nobody`: its agent's namespaces are then a user's, not root's.
    nobody: bool,
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
        // On every address: a filter by port alone would let 127.0.0.2 reach it.
        let listener = TcpListener::bind("0.0.0.0:0")?;
        listener.set_nonblocking(true)?;
        Ok(Self {
            cli,
            policy,
            listener,
            nobody: false,
        })
    }

    /// The same scene for Reins run as `nobody`: everything in it open to that user, so what it
    /// is refused is its confinement's doing.
    fn for_nobody(mut self) -> anyhow::Result<Self> {
        use std::os::unix::fs::PermissionsExt as _;
        let mut dirs = vec![self.cli.tmp.path().to_owned()];
        while let Some(dir) = dirs.pop() {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))?;
            for entry in std::fs::read_dir(&dir)?.flatten() {
                let kind = entry.file_type()?;
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if kind.is_file() {
                    std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o666))?;
                }
            }
        }
        self.nobody = true;
        Ok(self)
    }

    /// `reins run --acp` with the hostile agent, waited for; its output.
    fn run(&self, extra: &[&str]) -> anyhow::Result<(Option<i32>, String)> {
        self.run_as(&[], extra)
    }

    /// The same, with more arguments for the agent itself.
    fn run_as(
        &self,
        agent_args: &[String],
        extra: &[&str],
    ) -> anyhow::Result<(Option<i32>, String)> {
        let mut agent = vec![
            "python3".to_owned(),
            reins_tests::repo_root()
                .join("tests/fixtures/hostile_agent.py")
                .display()
                .to_string(),
            self.policy.display().to_string(),
            self.listener.local_addr()?.port().to_string(),
        ];
        agent.extend(agent_args.iter().cloned());
        let agent = shell_words::join(agent);
        let mut cmd = super::agent_cmd(&self.cli);
        cmd.env("REINS_POLICY", &self.policy)
            .args(["run", "--acp", "tidy up the project", "--agent", &agent])
            .args(extra)
            .arg("--workspace")
            .arg(self.cli.ws());
        if self.nobody {
            cmd = nobody(&cmd);
        }
        let out = super::bounded(&mut cmd)?;
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
        self.received().len()
    }

    /// What each connection made to the listener brought, in order.
    fn received(&self) -> Vec<String> {
        let mut got = Vec::new();
        while let Ok((mut s, _)) = self.listener.accept() {
            let mut text = String::new();
            let _ = s.set_nonblocking(false);
            let _ = s.read_to_string(&mut text);
            got.push(text);
        }
        got
    }

    /// `reins show` of the run, and how its agent ran ("confined (Landlock ABI 7, …): …").
    fn shown(&self) -> anyhow::Result<(serde_json::Value, String)> {
        let id = self.cli.only_run()?;
        let show = self.cli.json(&["show", &id])?;
        let how = show["run"]["compat"]["externalAgent"]["confinement"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ok((show, how))
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

/// `cmd`, run as `nobody` through `setpriv`, with its environment and folder.
fn nobody(cmd: &std::process::Command) -> std::process::Command {
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        c.current_dir(dir);
    }
    c
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
    let (show, how) = scene.shown()?;
    let agent = &show["run"]["compat"]["externalAgent"];
    assert!(how.starts_with("confined (Landlock ABI"), "{show}");
    assert!(how.contains("writes only its own state"), "{how}");
    assert_eq!(
        agent["profileSha256"].as_str().map(str::len),
        Some(64),
        "{show}"
    );
    Ok(())
}

/// This machine's own address on its network, not loopback: where a UDP socket aimed outside
/// would send from (aiming sends nothing).
fn own_address() -> anyhow::Result<String> {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0")?;
    probe.connect("203.0.113.1:9")?;
    Ok(probe.local_addr()?.ip().to_string())
}

#[test]
fn an_agent_reaches_its_model_endpoint_and_no_other_host_on_the_same_port() -> anyhow::Result<()> {
    // Its model named by a loopback address, by this machine's own address on its network, and
    // by a host name (this machine's, which its resolver knows).
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")?
        .trim()
        .to_owned();
    let root = rustix::process::geteuid().is_root();
    for (host, as_nobody) in [
        ("127.0.0.1".to_owned(), false),
        (own_address()?, false),
        (name.clone(), false),
        ("127.0.0.1".to_owned(), root),
        (name, root),
    ] {
        let scene = if as_nobody {
            Scene::new()?.for_nobody()?
        } else {
            Scene::new()?
        };
        let port = scene.listener.local_addr()?.port();
        let model = format!("http://{host}:{port}/v1");
        let (code, said) = scene.run_as(&[model], &[])?;
        assert_eq!(code, Some(0), "{said}");
        if as_nobody {
            use std::os::unix::fs::MetadataExt as _;
            let made_by = std::fs::read_dir(scene.cli.data())?
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.uid())
                .collect::<Vec<_>>();
            assert!(
                made_by.contains(&65534),
                "Reins did not run as nobody: {made_by:?}"
            );
        }
        assert!(said.contains("endpoint: ok"), "{host}: {said}");
        assert!(said.contains("elsewhere: failed"), "{host}: {said}");
        // Through Reins' relay, the endpoint got what the agent sent it, and nothing came by
        // another host on the same port. Its `tcp` try (127.0.0.1, the same port) gets through
        // only where that is the endpoint.
        let mut got = scene.received();
        got.sort();
        let want: &[&str] = if host == "127.0.0.1" {
            &["exfiltrated\n", "model\n"]
        } else {
            &["model\n"]
        };
        assert_eq!(got, want, "{host}: {said}");
        let (_, how) = scene.shown()?;
        assert!(how.contains("network namespace"), "{as_nobody}: {how}");
        assert!(how.contains(&format!("{host}:{port}")), "{how}");
        assert!(!how.contains("by port"), "{how}");
    }
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
    let (show, how) = scene.shown()?;
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
