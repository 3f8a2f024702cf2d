//! Running the real `reins` binary against a private data dir and a copy of the example workspace.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

pub use reins_tests::repo_root;

pub struct Cli {
    pub tmp: tempfile::TempDir,
    /// The shared database, when the suite runs on PostgreSQL (`REINS_TEST_BACKEND=postgres`).
    pub database: Option<String>,
}

impl Cli {
    /// A temp dir with `ws/` (a copy of examples/ops-workspace) and room for `data/`.
    pub fn new() -> anyhow::Result<Self> {
        let sb = reins_tests::Sandbox::new()?;
        Ok(Self {
            tmp: sb.tmp,
            database: sb.database,
        })
    }

    /// Facade options for this sandbox (its backend; file changes run without review).
    pub fn options(&self) -> reins_core::api::Options {
        reins_core::api::Options {
            database: self.database.clone(),
            ..reins_tests::options()
        }
    }

    pub fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    pub fn data(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    pub fn plan(name: &str) -> PathBuf {
        repo_root().join("examples/plans").join(name)
    }

    /// A plan of one step that writes `name` + newline to `path` (a change: it waits for review),
    /// saved beside this sandbox's workspace.
    pub fn write_plan(&self, name: &str, path: &str) -> anyhow::Result<PathBuf> {
        let plan = self.tmp.path().join(format!("{name}.toml"));
        std::fs::write(
            &plan,
            format!(
                "name = \"{name}\"\ngoal = \"g\"\n[[steps]]\ntool = \"fs.write\"\nargs = {{ path = \"{path}\", content = \"{name}\\n\" }}\n"
            ),
        )?;
        Ok(plan)
    }

    /// `reins` on this data dir, with a policy that lets file changes run without review (these
    /// tests are about recovery); `strict_cmd` uses the built-in defaults.
    pub fn cmd(&self) -> Command {
        let mut c = self.strict_cmd();
        c.env(
            "REINS_POLICY",
            repo_root().join("tests/fixtures/allow-file-changes.toml"),
        );
        c
    }

    /// `reins` with the built-in policy: every side effect is reviewed.
    pub fn strict_cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_reins"));
        c.env("REINS_DATA_DIR", self.data())
            .env("REINS_CONFIG_DIR", self.tmp.path().join("config"))
            .env_remove("REINS_POLICY")
            .env_remove("REINS_FAULT")
            .env_remove("REINS_LEASE_SECS")
            .env_remove("REINS_HOST");
        match &self.database {
            Some(url) => c.env("REINS_DATABASE_URL", url),
            None => c.env_remove("REINS_DATABASE_URL"),
        };
        c
    }

    pub fn run(&self, args: &[&str]) -> anyhow::Result<Output> {
        Ok(self.cmd().args(args).output()?)
    }

    pub fn run_plan(&self, plan: &str) -> anyhow::Result<Output> {
        let plan = Self::plan(plan);
        let ws = self.ws();
        Ok(self
            .cmd()
            .args(["run", "--plan"])
            .arg(&plan)
            .arg("--workspace")
            .arg(&ws)
            .output()?)
    }

    pub fn json(&self, args: &[&str]) -> anyhow::Result<serde_json::Value> {
        let out = self.run(&[args, &["--json"]].concat())?;
        anyhow::ensure!(
            out.status.success(),
            "reins {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    pub fn read(&self, rel: &str) -> anyhow::Result<String> {
        Ok(std::fs::read_to_string(self.ws().join(rel))?)
    }

    /// The payloads of the audit events of `kind`, oldest last as the log lists them.
    pub fn events(&self, kind: &str) -> anyhow::Result<Vec<serde_json::Value>> {
        let page = self.json(&["audit", "list", "--limit", "500"])?;
        Ok(page["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["kind"] == kind)
            .map(|e| e["payload"].clone())
            .collect())
    }

    /// The id of the only run.
    pub fn only_run(&self) -> anyhow::Result<String> {
        let runs = self.json(&["ps"])?;
        let list = runs.as_array().cloned().unwrap_or_default();
        anyhow::ensure!(list.len() == 1, "expected one run, got {}", list.len());
        Ok(list[0]["id"].as_str().unwrap_or_default().to_owned())
    }
}

pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Sends `sig` to a child process.
pub fn signal(child: &std::process::Child, sig: rustix::process::Signal) -> anyhow::Result<()> {
    let pid = rustix::process::Pid::from_child(child);
    Ok(rustix::process::kill_process(pid, sig)?)
}

/// `cmd`'s output, or an error with what it printed so far if it is still running after `limit`
/// (then it is killed). A run that drives an external agent can wait on the agent forever; a test
/// must fail with the reason instead of holding CI until its timeout.
pub fn output_within(
    cmd: &mut std::process::Command,
    limit: std::time::Duration,
) -> anyhow::Result<Output> {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    // Read both pipes as they fill, so a chatty child never blocks on a full pipe and what it
    // said is there to show if it has to be killed.
    let collect = |pipe: Option<Box<dyn Read + Send>>| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buf);
        let reader = pipe.map(|mut p| {
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                while let Ok(n) = p.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    sink.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(&chunk[..n]);
                }
            })
        });
        (buf, reader)
    };
    let (out, out_reader) = collect(child.stdout.take().map(|p| Box::new(p) as _));
    let (err, err_reader) = collect(child.stderr.take().map(|p| Box::new(p) as _));
    let take = |b: &Arc<Mutex<Vec<u8>>>| b.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!(
                "{:?} still running after {}s, killed; it said:\n{}{}",
                cmd.get_args().collect::<Vec<_>>(),
                limit.as_secs(),
                String::from_utf8_lossy(&take(&out)),
                String::from_utf8_lossy(&take(&err))
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    for reader in [out_reader, err_reader].into_iter().flatten() {
        let _ = reader.join();
    }
    Ok(Output {
        status,
        stdout: take(&out),
        stderr: take(&err),
    })
}
