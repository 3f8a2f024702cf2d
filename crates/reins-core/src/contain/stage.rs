//! Staging, the helper's side: a command runs against a copy-on-write view of the workspace, so
//! what it writes, creates, deletes or renames lands in a layer and the workspace is untouched.
//!
//! The helper, started with `--stage PLAN`, makes a mount namespace of its own (in a user
//! namespace when not root), mounts a tmpfs capped at the plan's size and an overlay whose lower
//! layer is the workspace and whose upper layer lives on that tmpfs, over the workspace's own
//! path. It then starts the helper again without `--stage`: that one confines itself and the
//! program exactly as an unstaged command would be, inside the view. When the program has ended,
//! this process (which the program never ran in) copies the upper layer out to the plan's `out`
//! directory as an [`Export`]: files as blobs, whiteouts as deletions. Reading what that means
//! against the workspace is the `stage` room's work.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The export's file name inside `out`, and its blobs' folder.
pub const EXPORT_FILE: &str = "export.json";
pub const BLOBS: &str = "blobs";
/// The tmpfs holding the upper layer, inside `out` (seen only inside the namespace).
const MOUNT: &str = "mnt";

/// What one staged start needs, read from a file Reins wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The workspace root: the lower layer, and where the view is mounted.
    pub workspace: PathBuf,
    /// An empty directory of Reins' own, outside everything the program may write.
    pub out: PathBuf,
    /// The layer's size cap in bytes: past it the program's writes fail with "No space left".
    pub cap_bytes: u64,
}

impl Plan {
    pub fn check(&self) -> Result<(), String> {
        for (name, p) in [("workspace", &self.workspace), ("out", &self.out)] {
            if !p.is_absolute() {
                return Err(format!("the staging plan's {name} must be an absolute path"));
            }
            // The overlay's options are a comma-separated list that names these paths.
            if p.to_str().is_none_or(|s| s.contains([',', ':', '\\'])) {
                return Err(format!(
                    "the staging plan's {name} {} cannot name an overlay layer",
                    p.display()
                ));
            }
        }
        if self.out.starts_with(&self.workspace) || self.workspace.starts_with(&self.out) {
            return Err("the staging plan's out must lie outside the workspace".into());
        }
        if self.cap_bytes < 4096 {
            return Err("the staging plan's cap must be at least 4096 bytes".into());
        }
        Ok(())
    }
}

/// One entry of the upper layer, by its path relative to the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Entry {
    /// A file the program created or changed (or only opened for writing): its bytes are the
    /// blob named `blob`.
    File {
        path: String,
        mode: u32,
        size: u64,
        blob: String,
    },
    /// A directory; `opaque` when it replaced one of the workspace's (its old entries are gone).
    Dir {
        path: String,
        mode: u32,
        opaque: bool,
    },
    Symlink {
        path: String,
        target: String,
    },
    /// The program deleted or renamed away what was at `path`.
    Whiteout { path: String },
    /// Something no workspace change is made of (a device, a socket, a fifo).
    Other { path: String },
}

impl Entry {
    pub fn path(&self) -> &str {
        match self {
            Entry::File { path, .. }
            | Entry::Dir { path, .. }
            | Entry::Symlink { path, .. }
            | Entry::Whiteout { path }
            | Entry::Other { path } => path,
        }
    }
}

/// What the staging helper leaves in `out`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Export {
    /// How the view was made: "overlay in a user namespace", "overlay (root)".
    pub mode: String,
    /// Making the namespace, the tmpfs and the overlay, in microseconds.
    pub setup_micros: u64,
    /// The layer reached its size cap: some of the program's writes failed.
    pub full: bool,
    pub cap_bytes: u64,
    /// The upper layer's entries, parents before children.
    pub entries: Vec<Entry>,
    /// Names in the layer that are not UTF-8 or could not be read: the export is not whole.
    pub unreadable: Vec<String>,
    /// The host names the program looked up (the view's name server answered that none exists);
    /// empty where the view had no network namespace of its own.
    #[serde(default)]
    pub looked_up: Vec<String>,
}

/// Why a view could not be made: the program never started.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("no mount namespace for the staged view: {0}")]
    Namespace(String),
    #[error("the staged view could not be mounted: {0}")]
    Mount(String),
    #[error("the layer could not be copied out: {0}")]
    Export(#[from] std::io::Error),
}

/// Runs a staged start: the view, the helper again inside it with `inner` (its arguments without
/// `--stage`), then the export. Called single-threaded, first thing in the helper.
pub fn run(plan: &Plan, inner: Vec<OsString>) -> ExitCode {
    let started = Instant::now();
    let (mode, lookups) = match enter(plan) {
        Ok(entered) => entered,
        Err(e) => {
            eprintln!("reins: staging: not staged, so not started: {e}");
            return ExitCode::from(super::helper::FAILED);
        }
    };
    let setup_micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let child = std::process::Command::new("/proc/self/exe")
        .arg(super::helper::SUBCOMMAND)
        .args(lookups.is_some().then_some("--staged-net"))
        .args(inner)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("reins: staging: the confined start failed: {e}");
            return ExitCode::from(super::helper::FAILED);
        }
    };
    // Asked to stop (a time limit): the inner helper ends the program's whole tree, and what
    // the layer holds by then is still copied out.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
    if let Ok(mut signals) =
        signal_hook::iterator::Signals::new([libc::SIGTERM, libc::SIGINT, libc::SIGHUP])
    {
        std::thread::spawn(move || {
            if signals.forever().next().is_some() {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            }
        });
    }
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("reins: staging: {e}");
            return ExitCode::from(super::helper::FAILED);
        }
    };
    let mounted = plan.out.join(MOUNT);
    let full = nix::sys::statvfs::statvfs(&mounted)
        .map(|s| s.blocks_available().saturating_mul(s.fragment_size()) <= 64 * 1024)
        .unwrap_or(false);
    let layer = Export {
        mode,
        setup_micros,
        full,
        cap_bytes: plan.cap_bytes,
        entries: Vec::new(),
        unreadable: Vec::new(),
        looked_up: lookups.map(|l| l.names()).unwrap_or_default(),
    };
    let export = export(&mounted.join("upper"), &plan.out, layer);
    if let Err(e) = export {
        eprintln!("reins: staging: {e}");
        return ExitCode::from(super::helper::FAILED);
    }
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)),
        (None, Some(sig)) => ExitCode::from(128u8.saturating_add(u8::try_from(sig).unwrap_or(0))),
        (None, None) => ExitCode::from(1),
    }
}

/// The namespaces (mounts, and a network of its own where the kernel gives one), the capped tmpfs,
/// the overlay over the workspace, and the name server. Returns the mode in words, and what the
/// name server hears (None without a network namespace of its own).
fn enter(plan: &Plan) -> Result<(String, Option<super::lookup::Lookups>), StageError> {
    use nix::mount::{mount, MsFlags};
    use nix::sched::{unshare, CloneFlags};
    let mounted = plan.out.join(MOUNT);
    std::fs::create_dir(&mounted).map_err(|e| StageError::Mount(format!("{}: {e}", mounted.display())))?;
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let (ns, net) = (CloneFlags::CLONE_NEWNS, CloneFlags::CLONE_NEWNET);
    let mut own_net = true;
    let as_user = if uid.is_root() && unshare(ns | net).is_ok() {
        false
    } else if uid.is_root() && unshare(ns).is_ok() {
        own_net = false;
        false
    } else {
        let user = CloneFlags::CLONE_NEWUSER;
        if unshare(ns | net | user).is_err() {
            own_net = false;
            unshare(ns | user).map_err(|e| StageError::Namespace(e.to_string()))?;
        }
        std::fs::write("/proc/self/setgroups", "deny")
            .and_then(|()| std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")))
            .and_then(|()| std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")))
            .map_err(|e| StageError::Namespace(format!("no id map: {e}")))?;
        true
    };
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(failed("mounts not made private"))?;
    mount(
        Some("tmpfs"),
        &mounted,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(format!("size={},mode=0700", plan.cap_bytes).as_str()),
    )
    .map_err(failed("the layer's tmpfs"))?;
    for dir in ["upper", "work"] {
        std::fs::create_dir(mounted.join(dir))
            .map_err(|e| StageError::Mount(format!("the layer's {dir} dir: {e}")))?;
    }
    // Plain layers: no redirects or metadata-only copies, so the upper layer says everything.
    let mut options = format!(
        "lowerdir={},upperdir={},workdir={}",
        plan.workspace.display(),
        mounted.join("upper").display(),
        mounted.join("work").display()
    );
    options.push_str(if as_user {
        ",userxattr"
    } else {
        ",redirect_dir=off,metacopy=off,index=off"
    });
    mount(
        Some("overlay"),
        &plan.workspace,
        Some("overlay"),
        MsFlags::empty(),
        Some(options.as_str()),
    )
    .map_err(failed("the overlay"))?;
    // The working directory was found before the overlay covered it: find it again, or the
    // program would start in the workspace itself, under the view.
    let cwd = std::env::current_dir().map_err(|e| StageError::Mount(format!("cwd: {e}")))?;
    std::env::set_current_dir(&cwd).map_err(|e| StageError::Mount(format!("cwd: {e}")))?;
    // Without its name server the namespace still has no route out: the program is refused its
    // sockets as any command without network is, and names nothing.
    let lookups = own_net
        .then(|| super::lookup::serve(&plan.out.join("resolv.conf")).ok())
        .flatten();
    let mode = if as_user {
        "overlay in a user namespace"
    } else {
        "overlay (root)"
    };
    Ok((mode.into(), lookups))
}

fn failed(what: &'static str) -> impl Fn(nix::Error) -> StageError {
    move |e| StageError::Mount(format!("{what}: {e}"))
}

/// Copies the upper layer at `upper` into `out`: each file's bytes as a blob, then `export` (what
/// it says of the layer besides its entries) with the entries.
fn export(upper: &Path, out: &Path, mut export: Export) -> Result<(), StageError> {
    let blobs = out.join(BLOBS);
    std::fs::create_dir(&blobs)?;
    walk(upper, "", &blobs, &mut export)?;
    let text = serde_json::to_vec(&export).map_err(std::io::Error::other)?;
    let tmp = out.join(format!("{EXPORT_FILE}.tmp"));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(&text)?;
    file.sync_all()?;
    std::fs::rename(&tmp, out.join(EXPORT_FILE))?;
    Ok(())
}

fn walk(dir: &Path, rel: &str, blobs: &Path, export: &mut Export) -> Result<(), StageError> {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    let mut names: Vec<OsString> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        let Some(name_str) = name.to_str() else {
            export.unreadable.push(format!("{rel}{}", name.to_string_lossy()));
            continue;
        };
        let path = format!("{rel}{name_str}");
        let full = dir.join(&name);
        let meta = std::fs::symlink_metadata(&full)?;
        let kind = meta.file_type();
        if kind.is_dir() {
            export.entries.push(Entry::Dir {
                path: path.clone(),
                mode: meta.mode() & 0o7777,
                opaque: opaque(&full),
            });
            walk(&full, &format!("{path}/"), blobs, export)?;
        } else if kind.is_file() {
            let blob = export.entries.len().to_string();
            copy_nofollow(&full, &blobs.join(&blob))?;
            export.entries.push(Entry::File {
                path,
                mode: meta.mode() & 0o7777,
                size: meta.len(),
                blob,
            });
        } else if kind.is_symlink() {
            match std::fs::read_link(&full)?.into_os_string().into_string() {
                Ok(target) => export.entries.push(Entry::Symlink { path, target }),
                Err(_) => export.unreadable.push(path),
            }
        } else if kind.is_char_device() && meta.rdev() == 0 {
            export.entries.push(Entry::Whiteout { path });
        } else {
            export.entries.push(Entry::Other { path });
        }
    }
    Ok(())
}

/// An overlay directory that hides the lower one's entries carries `overlay.opaque` = "y", under
/// `trusted.` when mounted by root and `user.` in a user namespace.
fn opaque(dir: &Path) -> bool {
    ["trusted.overlay.opaque", "user.overlay.opaque"]
        .iter()
        .any(|name| xattr_is_y(dir, name))
}

fn xattr_is_y(path: &Path, name: &str) -> bool {
    let mut buf = [0u8; 4];
    rustix::fs::lgetxattr(path, name, &mut buf).is_ok_and(|n| buf[..n.min(4)] == *b"y")
}

fn copy_nofollow(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut src = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(from)?;
    let mut dst = std::fs::File::create(to)?;
    std::io::copy(&mut src, &mut dst)?;
    Ok(())
}
