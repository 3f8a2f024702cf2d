//! Drives the real app binary in a real window: tauri-driver + WebKitWebDriver under Xvfb
//! (../shared/guides/e2e.md). Each `App` gets its own data dir, config dir and driver ports, so
//! tests run in parallel. Run through `scripts/e2e`, which provides the display and a session bus.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use thirtyfour::prelude::*;

/// The `reins` CLI next to this test binary (built by `cargo build -p reins-cli`).
pub fn reins_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    dir.join("reins")
}

pub fn app_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_reins-app"))
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// One data dir and config dir shared by the app and the CLI across restarts.
pub struct Home {
    pub root: tempfile::TempDir,
    /// Set for the app and the CLI on this home: a team database and this "machine's" name.
    env: Vec<(String, String)>,
}

impl Home {
    pub fn new() -> Result<Self> {
        let root = tempfile::tempdir()?;
        std::fs::create_dir_all(root.path().join("data"))?;
        std::fs::create_dir_all(root.path().join("config"))?;
        Ok(Self {
            root,
            env: Vec::new(),
        })
    }

    /// A home on machine `host` whose app and CLI open the team database at `url`.
    pub fn on_team(url: &str, host: &str) -> Result<Self> {
        let mut home = Self::new()?;
        home.env = vec![
            ("REINS_DATABASE_URL".into(), url.into()),
            ("REINS_HOST".into(), host.into()),
        ];
        Ok(home)
    }
    pub fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }
    pub fn config(&self) -> PathBuf {
        self.root.path().join("config")
    }
    /// A workspace folder with these files.
    pub fn workspace(&self, name: &str, files: &[(&str, &str)]) -> Result<PathBuf> {
        let ws = self.root.path().join(name);
        for (rel, text) in files {
            let p = ws.join(rel);
            std::fs::create_dir_all(p.parent().context("parent")?)?;
            std::fs::write(p, text)?;
        }
        Ok(ws)
    }
    /// Runs the `reins` CLI on this home; returns stdout (fails on a non-zero exit except `ok`).
    pub fn reins(&self, args: &[&str], ok: &[i32]) -> Result<String> {
        let out = Command::new(reins_bin())
            .args(args)
            .env("REINS_DATA_DIR", self.data())
            .env("REINS_CONFIG_DIR", self.config())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("run {}", reins_bin().display()))?;
        let code = out.status.code().unwrap_or(-1);
        if code != 0 && !ok.contains(&code) {
            bail!(
                "reins {args:?} exited {code}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
    /// Adds a profile fact through the CLI.
    pub fn remember(&self, category: &str, key: &str, value: &str) -> Result<()> {
        self.reins(
            &[
                "memory",
                "add",
                "--category",
                category,
                "--key",
                key,
                "--value",
                value,
            ],
            &[],
        )
        .map(drop)
    }

    /// Queues a plan run on a workspace; returns the run id.
    pub fn queue_plan(&self, plan: &str, ws: &Path) -> Result<String> {
        let plan_file = self
            .root
            .path()
            .join(format!("plan-{}.toml", uuid::Uuid::now_v7()));
        std::fs::write(&plan_file, plan)?;
        let out = self.reins(
            &[
                "run",
                "--plan",
                &plan_file.display().to_string(),
                "--workspace",
                &ws.display().to_string(),
                "--queue",
            ],
            &[],
        )?;
        out.split_whitespace()
            .find(|w| w.len() == 36 && w.chars().filter(|c| *c == '-').count() == 4)
            .map(str::to_owned)
            .with_context(|| format!("no run id in {out:?}"))
    }
}

/// The app under WebDriver. Quit it with `quit()`; dropping it stops the driver.
pub struct App {
    pub driver: Option<WebDriver>,
    tauri_driver: Child,
    pid: Option<u32>,
    pub launched_in: Duration,
}

impl App {
    pub async fn launch(home: &Home) -> Result<Self> {
        Self::launch_with(home, &[]).await
    }

    /// `launch`, with these variables set in the app's environment (a `PATH` with more programs).
    pub async fn launch_with(home: &Home, env: &[(&str, &std::ffi::OsStr)]) -> Result<Self> {
        let (port, native) = (free_port()?, free_port()?);
        let tauri_driver = Command::new(tauri_driver_bin())
            .envs(env.iter().copied())
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native.to_string(),
            ])
            .env("REINS_DATA_DIR", home.data())
            .env("REINS_CONFIG_DIR", home.config())
            .envs(home.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("start tauri-driver (cargo install tauri-driver --locked)")?;
        let mut app = Self {
            driver: None,
            tauri_driver,
            pid: None,
            launched_in: Duration::ZERO,
        };
        // The start-up race: WebKitWebDriver must answer before the session is asked for.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = reqwest::get(format!("http://127.0.0.1:{native}/status"))
                .await
                .map(|r| r.status().is_success())
                .unwrap_or(false)
                && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
            if ready {
                break;
            }
            if Instant::now() > deadline {
                bail!("tauri-driver did not come up on ports {port}/{native}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let mut caps = thirtyfour::Capabilities::new();
        caps.set(
            "tauri:options",
            serde_json::json!({ "application": app_bin() }),
        )?;
        let started = Instant::now();
        // Starting the app inside the session request takes seconds, and far longer on a loaded
        // machine (seen: over 30 s while another build ran).
        let driver = WebDriver::builder(format!("http://127.0.0.1:{port}"), caps)
            .request_timeout(Duration::from_secs(90))
            .await
            .context("open a WebDriver session on the app")?;
        app.driver = Some(driver);
        // Visible: the shell rendered its navigation.
        app.find(By::Css("nav.sidebar")).await?;
        app.launched_in = started.elapsed();
        app.pid = Self::pid(home);
        Ok(app)
    }

    pub fn d(&self) -> &WebDriver {
        self.driver
            .as_ref()
            .unwrap_or_else(|| panic!("the session is closed"))
    }

    /// Waits up to 15 s for an element.
    pub async fn find(&self, by: By) -> Result<WebElement> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            match self.d().find(by.clone()).await {
                Ok(e) => return Ok(e),
                Err(e) if Instant::now() > deadline => {
                    return Err(e).context(format!("element {by:?}"))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(25)).await,
            }
        }
    }

    /// Waits until `f` holds (up to 30 s: on a cold, loaded CI machine a run started from the
    /// app once took longer than 15 s to reach its review).
    pub async fn until<F, Fut>(&self, what: &str, f: F) -> Result<()>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<bool>>,
    {
        self.until_within(what, Duration::from_secs(30), f).await
    }

    /// `until` with its own limit: for waits on programs Reins starts (Node agents and tool
    /// servers start slowly on a busy machine).
    pub async fn until_within<F, Fut>(&self, what: &str, limit: Duration, mut f: F) -> Result<()>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<bool>>,
    {
        let deadline = Instant::now() + limit;
        loop {
            if f().await.unwrap_or(false) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("timed out waiting until {what}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn click(&self, css: &str) -> Result<()> {
        self.find(By::Css(css)).await?.click().await?;
        Ok(())
    }

    /// Replaces a text field's content by typing, as a person would (select all, delete, type).
    pub async fn fill(&self, css: &str, text: &str) -> Result<()> {
        let field = self.find(By::Css(css)).await?;
        field.click().await?;
        field.send_keys(Key::Control + "a").await?;
        field.send_keys(Key::Delete).await?;
        field.send_keys(text).await?;
        // Keys may still be arriving when send_keys returns: wait for the field to hold it all.
        let held = self
            .until("the field holds what was typed", || async {
                Ok(field.prop("value").await?.as_deref() == Some(text))
            })
            .await;
        if held.is_err() {
            bail!("{css} holds {:?}, not {text:?}", field.prop("value").await?);
        }
        Ok(())
    }

    pub async fn view(&self, name: &str) -> Result<()> {
        self.click(&format!("button.nav[data-view='{name}']")).await
    }

    /// Presses a key on the page (the inbox's keyboard triage).
    pub async fn key(&self, key: &str) -> Result<()> {
        self.d().action_chain().send_keys(key).perform().await?;
        Ok(())
    }

    /// Saves a PNG of the window to docs/screenshots/NAME.png.
    pub async fn screenshot(&self, name: &str) -> Result<()> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots");
        std::fs::create_dir_all(&dir)?;
        // The webview's screenshot is its last composited frame: let the latest render reach it.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let png = self.d().screenshot_as_png().await?;
        std::fs::write(dir.join(format!("{name}.png")), png)?;
        Ok(())
    }

    /// The app's process id (the binary started with this data dir).
    pub fn pid(home: &Home) -> Option<u32> {
        let want = format!("REINS_DATA_DIR={}", home.data().display());
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let exe = std::fs::read_link(entry.path().join("exe")).unwrap_or_default();
            if exe != app_bin() {
                continue;
            }
            let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
            if env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()) {
                return Some(pid);
            }
        }
        None
    }

    /// The app exited on its own (quit from the tray, a signal): ends the WebDriver session without
    /// failing on the app being gone.
    pub async fn end_session_after_exit(mut self) {
        if let Some(d) = self.driver.take() {
            let _ = d.quit().await;
        }
    }

    /// Ends the session (which ends the app) and the driver.
    pub async fn quit(mut self) -> Result<()> {
        let pid = self.pid.take();
        if let Some(d) = self.driver.take() {
            d.quit().await?;
        }
        // Gone for real (its bus names released) before a test may start the next one.
        if let Some(pid) = pid {
            let deadline = Instant::now() + Duration::from_secs(10);
            while running(pid) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }
}

impl Drop for App {
    fn drop(&mut self) {
        // SIGTERM, not SIGKILL: tauri-driver then stops WebKitWebDriver too.
        let _ = Command::new("kill")
            .arg(self.tauri_driver.id().to_string())
            .status();
        let _ = self.tauri_driver.wait();
    }
}

fn tauri_driver_bin() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let cargo = home.join(".cargo/bin/tauri-driver");
    if cargo.exists() {
        cargo
    } else {
        PathBuf::from("tauri-driver")
    }
}

/// Starts the app binary again on `home`, as a person would from the launcher; returns its exit
/// status, or None if it still runs after 15 s (then it is killed).
pub async fn launch_again(home: &Home) -> Result<Option<std::process::ExitStatus>> {
    let mut second = Command::new(app_bin())
        .env("REINS_DATA_DIR", home.data())
        .env("REINS_CONFIG_DIR", home.config())
        .envs(home.env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = second.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() > deadline {
            let _ = second.kill();
            let _ = second.wait();
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Resident memory of a process, in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A process that exists and is not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}
