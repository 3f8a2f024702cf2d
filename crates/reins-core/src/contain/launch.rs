//! Starting a program confined: the command line that runs it through the helper, a temp dir of
//! its own, and what the kernel enforced, read back afterwards.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::enforced::Enforced;
use super::profile::{Places, Profile};

static HELPER: OnceLock<PathBuf> = OnceLock::new();

/// Names the binary that answers to `__contain`: the `reins` binary and the app call it with their
/// own path when they start.
pub fn set_helper(path: PathBuf) {
    let _ = HELPER.set(path);
}

/// The helper binary: the one this process named, else `REINS_CONTAIN_HELPER` (for test programs,
/// which are not the Reins binary).
pub fn helper() -> Option<PathBuf> {
    HELPER
        .get()
        .cloned()
        .or_else(|| std::env::var_os("REINS_CONTAIN_HELPER").map(PathBuf::from))
        .filter(|p| p.is_file())
}

/// What confines the processes one engine starts.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// The helper binary; none: processes run unconfined, and say so.
    pub helper: Option<PathBuf>,
    /// Reins' own data dir, config dir and policy file: out of every profile's reach.
    pub reins: Vec<PathBuf>,
    /// What the kernel holds here, probed once (see [`Setup::kernel`]).
    pub probed: std::sync::Arc<OnceLock<Kernel>>,
    /// How an agent's network is filtered here, probed once (see [`Setup::agents_network_once`]).
    pub agents_probed: std::sync::Arc<OnceLock<String>>,
}

/// What this machine's kernel holds for a command Reins runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// No helper in this process (an embedding, a test): commands run unconfined, and say so.
    NoHelper,
    /// The profile holds in full: "confined (Landlock ABI 7, seccomp, mount layer)".
    Full(String),
    /// It holds in part or not at all (no Landlock, an older ABI): in words.
    Partial(String),
}

/// One confined start: the profile, a temp dir of its own (removed when this is dropped) and the
/// report the helper writes there.
pub struct Confined {
    pub profile: Profile,
    helper: PathBuf,
    dir: PathBuf,
    /// Protected paths that did not exist at the start: no mount can hold a name that is not
    /// there yet, so they are checked when the program ends.
    absent: Vec<PathBuf>,
    /// The relay of a network filtered by host: its plan's file, and the task serving it.
    relay: Option<(PathBuf, super::relay::Running)>,
    /// Staged: the plan's file; the program runs against a copy-on-write view of the workspace.
    stage: Option<PathBuf>,
}

static STARTS: AtomicU64 = AtomicU64::new(0);

impl Setup {
    /// A private temp dir and the places a profile is derived from, for a process in `workspace`.
    /// None when there is no helper.
    pub fn prepare(
        &self,
        workspace: &Path,
        profile: impl FnOnce(&Places) -> Profile,
    ) -> std::io::Result<Option<Confined>> {
        let Some(helper) = self.helper.clone() else {
            return Ok(None);
        };
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        // Unique even when this pid was a killed Reins' before, whose dir (and relay socket) may
        // still be there: a new dir, never one found.
        let dir = crate::scratch::create(crate::scratch::Kind::Process { n })?;
        std::fs::create_dir(dir.join("tmp"))?;
        let places = Places {
            workspace: workspace.to_owned(),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|h| h.is_absolute()),
            reins: self.reins.clone(),
            tmp: dir.join("tmp"),
        };
        let profile = profile(&places);
        let absent = profile
            .read_only
            .iter()
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .cloned()
            .collect();
        let relay = match &profile.network {
            super::profile::Network::To { endpoints, .. } => super::relay::start(&dir, endpoints)?,
            _ => None,
        };
        Ok(Some(Confined {
            profile,
            helper,
            dir,
            absent,
            relay,
            stage: None,
        }))
    }
}

impl Setup {
    /// What the kernel holds here, found by confining `true` the first time it is asked (a few
    /// milliseconds, once per engine).
    pub fn kernel(&self) -> Kernel {
        self.probed
            .get_or_init(|| {
                if self.helper.is_none() {
                    return Kernel::NoHelper;
                }
                match self.probe() {
                    (true, said) => Kernel::Full(said),
                    (false, said) => Kernel::Partial(said),
                }
            })
            .clone()
    }

    /// What the kernel enforces on this machine, found by confining `true` once: whether the
    /// profile holds in full, and in words.
    pub fn probe(&self) -> (bool, String) {
        let place = std::env::temp_dir();
        let confined = match self.prepare(&place, |p| Profile::command(p, false)) {
            Ok(Some(c)) => c,
            Ok(None) => return (false, NO_HELPER.into()),
            Err(e) => return (false, format!("not checked: {e}")),
        };
        let status = confined.run_true(&place);
        match (status, confined.enforced()) {
            (Ok(s), Some(e)) if s.success() => (e.full(), e.said()),
            (_, Some(e)) => (false, e.said()),
            (Ok(s), None) => (false, format!("the confinement helper failed ({s})")),
            (Err(e), None) => (false, format!("the confinement helper could not start: {e}")),
        }
    }
}

impl Setup {
    /// How an agent's network is filtered here, in words, found by starting `true` under the
    /// strictest agent profile once: "an agent reaches only its endpoints (network namespace)",
    /// or by port only where no network namespace can be made. Call it inside a Tokio runtime
    /// (the relay's side is a task).
    pub fn agents_network(&self) -> String {
        let place = std::env::temp_dir();
        let reach = super::profile::AgentReach::default();
        let confined = match self.prepare(&place, |p| Profile::agent(p, &reach)) {
            Ok(Some(c)) => c,
            Ok(None) => return "agents run unconfined: no confinement helper".into(),
            Err(e) => return format!("an agent's network was not checked: {e}"),
        };
        let _ = confined.run_true(&place);
        match confined.enforced() {
            Some(e) if e.netns => "an agent reaches only its endpoints (network namespace)".into(),
            Some(_) => {
                "an agent's network is filtered by port, not host (no network namespace here)".into()
            }
            None => "an agent's network was not checked: the confinement helper failed".into(),
        }
    }
}

impl Setup {
    /// [`Setup::agents_network`], found the first time it is asked (as [`Setup::kernel`] is).
    pub fn agents_network_once(&self) -> String {
        self.agents_probed
            .get_or_init(|| self.agents_network())
            .clone()
    }
}

impl Confined {
    /// `true` started through the helper in `place`, with nothing of this process's environment:
    /// what a probe of the kernel runs.
    fn run_true(&self, place: &Path) -> std::io::Result<std::process::ExitStatus> {
        self.command(&["true".to_owned()])
            .current_dir(place)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
    }

    /// The command that starts `argv` through the helper; the caller adds the environment,
    /// folder and pipes as for the program itself.
    pub fn command(&self, argv: &[String]) -> Command {
        let mut cmd = Command::new(&self.helper);
        let mut args = self.argv(argv);
        args.remove(0);
        cmd.args(args);
        cmd
    }

    /// The command line that starts `argv` through the helper, for callers that build their own
    /// process (the agents, with their pipes).
    pub fn argv(&self, argv: &[String]) -> Vec<String> {
        let mut out = vec![
            self.helper.display().to_string(),
            super::helper::SUBCOMMAND.to_owned(),
            "--profile".to_owned(),
            serde_json::to_string(&self.profile).unwrap_or_default(),
            "--report".to_owned(),
            self.report().display().to_string(),
        ];
        if let Some((plan, _)) = &self.relay {
            out.extend(["--relay".to_owned(), plan.display().to_string()]);
        }
        if let Some(plan) = &self.stage {
            out.extend(["--stage".to_owned(), plan.display().to_string()]);
        }
        out.push("--".to_owned());
        out.extend(argv.iter().cloned());
        out
    }

    /// How the program runs, in words: "confined (Landlock ABI 7, seccomp): no network, writes
    /// inside the workspace", from what the helper reported.
    pub fn said(&self, workspace: &Path) -> String {
        match self.enforced() {
            Some(e) => format!(
                "{}: {}{}",
                e.said(),
                self.profile.said(workspace),
                by_port(&self.profile, &e)
            ),
            None => format!("confinement not reported: {}", self.profile.said(workspace)),
        }
    }

    /// Runs the program staged: against a copy-on-write view of `workspace`, its file effects
    /// landing in a layer of at most `cap_bytes` that [`Self::stage_out`] holds afterwards.
    pub fn stage(&mut self, workspace: &Path, cap_bytes: u64) -> std::io::Result<()> {
        let out = self.dir.join("stage");
        std::fs::create_dir(&out)?;
        let plan = super::stage::Plan {
            workspace: workspace.to_owned(),
            out,
            cap_bytes,
        };
        plan.check().map_err(std::io::Error::other)?;
        let file = self.dir.join("stage.json");
        std::fs::write(&file, serde_json::to_vec(&plan).map_err(std::io::Error::other)?)?;
        self.stage = Some(file);
        Ok(())
    }

    /// Where a staged program's layer was copied out, once it has ended.
    pub fn stage_out(&self) -> Option<PathBuf> {
        self.stage.as_ref().map(|_| self.dir.join("stage"))
    }

    /// The program's own temp dir (its `TMPDIR`).
    pub fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// A file of Reins' for the program, beside its temp dir: it can read it, not write it, and
    /// it goes when the program does.
    pub fn own_file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn report(&self) -> PathBuf {
        self.dir.join("enforced.json")
    }

    /// What the kernel enforced, as the helper reported it; None when it never got that far.
    pub fn enforced(&self) -> Option<Enforced> {
        let text = std::fs::read_to_string(self.report()).ok()?;
        serde_json::from_str(text.trim()).ok()
    }
}

impl Confined {
    /// Removes the protected paths the program created (they did not exist when it started, so
    /// nothing of the person's is lost) and returns them: each is a blocked attempt.
    pub fn sweep(&self) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for path in &self.absent {
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            let gone = if meta.is_dir() {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
            if gone.is_ok() {
                removed.push(path.clone());
            }
        }
        removed
    }

    /// [`Self::sweep`], each removal in words as a blocked attempt by `who`, paths shown as the
    /// workspace's (`root`).
    pub fn sweep_said(&self, who: &str, root: &Path) -> Vec<String> {
        self.sweep()
            .into_iter()
            .map(|p| {
                let shown = p.strip_prefix(root).unwrap_or(&p).display().to_string();
                format!("{who} tried to create {shown} (a protected path): removed")
            })
            .collect()
    }
}

/// For a network of endpoints the kernel could not filter by host (no network namespace here), how
/// it is filtered instead.
fn by_port(profile: &Profile, enforced: &Enforced) -> &'static str {
    match &profile.network {
        super::profile::Network::To { serves_itself, .. } if !enforced.netns => {
            if *serves_itself {
                " (no network namespace here: any host and port)"
            } else {
                " (no network namespace here: by port, not host)"
            }
        }
        _ => "",
    }
}

/// What a piped program is started with, through the helper when it is confined: the command
/// line, and its own `TMPDIR` to set.
pub fn piped_start(confined: Option<&Confined>, argv: &[String]) -> (Vec<String>, Option<String>) {
    match confined {
        Some(c) => (c.argv(argv), Some(c.tmp().display().to_string())),
        None => (argv.to_vec(), None),
    }
}

/// How a program Reins started without a helper runs, in words.
pub const NO_HELPER: &str = "unconfined: no confinement helper in this process";

impl Drop for Confined {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
