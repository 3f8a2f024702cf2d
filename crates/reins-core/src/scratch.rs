//! Folders of this process's own in the temp dir: a confined process's files (its private `/tmp`,
//! its staging layer, its relay socket) and a workspace watch's marks. Each name carries the pid of
//! the process that made it, so the folders a killed Reins left behind can be told from those of
//! one still running, and removed ([`sweep`]). What they held that matters outlives them elsewhere:
//! a staged command's bytes are in the blob store, a run's state in the database.

use std::path::{Path, PathBuf};
use std::sync::Once;

/// What a scratch folder is for; its name's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A confined process's files: `reins-PID-N-XXXXXXXX` (N counts this process's starts).
    Process { n: u64 },
    /// A workspace watch's marks: `reins-watch-PID-UUID`.
    Watch,
}

/// A new folder in the temp dir for `kind`, readable by its owner only. Never one found: the name
/// ends in fresh random digits, and creating it fails if it exists.
pub fn create(kind: Kind) -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(name(kind, std::process::id()));
    std::fs::create_dir(&dir)?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

fn name(kind: Kind, pid: u32) -> String {
    let unique = uuid::Uuid::now_v7().simple().to_string();
    match kind {
        Kind::Process { n } => format!("reins-{pid}-{n}-{}", &unique[unique.len() - 8..]),
        Kind::Watch => format!("reins-watch-{pid}-{unique}"),
    }
}

/// The pid in a scratch folder's name; None for any other name.
fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("reins-")?;
    let parts: Vec<&str> = rest.split('-').collect();
    let (pid, hex, len) = match parts.as_slice() {
        ["watch", pid, hex] => (pid, hex, 32),
        [pid, n, hex] if n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() => (pid, hex, 8),
        _ => return None,
    };
    let hex_ok = hex.len() == len && hex.bytes().all(|b| b.is_ascii_hexdigit());
    let pid_ok = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    (hex_ok && pid_ok).then(|| pid.parse().ok()).flatten()
}

/// What a sweep removed, and what it could not.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    pub removed: Vec<PathBuf>,
    pub failed: Vec<(PathBuf, String)>,
}

/// Removes the scratch folders in `dir` whose process is gone: its pid names no process here.
/// Folders of live processes, of other users, and every other name are left alone.
pub fn sweep_in(dir: &Path) -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return swept;
    };
    let me = rustix::process::getuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner) else {
            continue;
        };
        if pid == std::process::id() || crate::worker::start_time(pid).is_some() {
            continue;
        }
        let path = entry.path();
        // Not following a link: a scratch folder is a folder, and only its owner's to remove.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        use std::os::unix::fs::MetadataExt as _;
        if !meta.is_dir() || meta.uid() != me {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => swept.removed.push(path),
            Err(e) => swept.failed.push((path, e.to_string())),
        }
    }
    swept
}

/// [`sweep_in`] the temp dir, once per process.
pub fn sweep() {
    static SWEPT: Once = Once::new();
    SWEPT.call_once(|| {
        let swept = sweep_in(&std::env::temp_dir());
        if !swept.removed.is_empty() {
            tracing::info!(
                count = swept.removed.len(),
                "removed the temp folders of Reins processes that are gone"
            );
        }
        for (path, error) in &swept.failed {
            tracing::warn!(path = %path.display(), %error, "a gone process's temp folder was not removed");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_pid_and_nothing_else_is_taken_for_one() {
        assert_eq!(owner(&name(Kind::Process { n: 3 }, 4242)), Some(4242));
        assert_eq!(owner(&name(Kind::Watch, 17)), Some(17));
        assert_eq!(owner("reins-10045-1-2bafe11b"), Some(10045));
        for other in [
            "reins-demo-1796624296716",
            "reins-fuzz",
            "reins-12-1-2bafe11",
            "reins-12-x-2bafe11b",
            "reins-watch-12-2bafe11b",
            "reins--1-2bafe11b",
            "reins-12-1-2bafe11b-more",
            "other-12-1-2bafe11b",
        ] {
            assert_eq!(owner(other), None, "{other}");
        }
    }

    #[test]
    fn a_sweep_removes_the_folders_of_gone_processes_only() -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        // A pid no process has: past the kernel's largest.
        let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")?.trim().parse()?;
        let gone = max + 1;
        let alive = std::process::id();
        let parent = rustix::process::getppid().map_or(1, |p| p.as_raw_nonzero().get() as u32);
        let make = |name: String| -> std::io::Result<PathBuf> {
            let p = tmp.path().join(name);
            std::fs::create_dir(&p)?;
            std::fs::write(p.join("inside"), b"x")?;
            Ok(p)
        };
        let dead_process = make(name(Kind::Process { n: 0 }, gone))?;
        let dead_watch = make(name(Kind::Watch, gone))?;
        let mine = make(name(Kind::Process { n: 1 }, alive))?;
        let living = make(name(Kind::Watch, parent))?;
        let unrelated = make(format!("reins-demo-{gone}"))?;
        // A link named like a gone process's folder is not followed, and stays.
        let target = make("target".into())?;
        let link = tmp.path().join(name(Kind::Process { n: 2 }, gone));
        std::os::unix::fs::symlink(&target, &link)?;

        let swept = sweep_in(tmp.path());
        let mut removed = swept.removed.clone();
        removed.sort();
        let mut want = vec![dead_process.clone(), dead_watch.clone()];
        want.sort();
        assert_eq!(removed, want);
        assert!(swept.failed.is_empty(), "{:?}", swept.failed);
        assert!(!dead_process.exists() && !dead_watch.exists());
        for kept in [&mine, &living, &unrelated, &target] {
            assert!(kept.join("inside").exists(), "{} was kept", kept.display());
        }
        assert!(std::fs::symlink_metadata(&link).is_ok(), "the link stays");
        Ok(())
    }
}
