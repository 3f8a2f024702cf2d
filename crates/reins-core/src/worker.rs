//! Who holds a run. A worker's identity names its host, pid and process start time, so another
//! process on the same machine can tell, without waiting for the lease to run out, that the holder is
//! gone (crashed, killed) — and take the run over at once. Anything it cannot be sure of (another
//! host, no /proc, an identity it cannot read) counts as alive: then only the lease decides.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerId(String);

impl WorkerId {
    /// This process: `host:pid:start-time:nonce`.
    pub fn current() -> Self {
        let pid = std::process::id();
        let start = start_time(pid)
            .map(|t| t.to_string())
            .unwrap_or_else(|| "?".into());
        let nonce = uuid::Uuid::now_v7().simple().to_string();
        Self(format!("{}:{pid}:{start}:{}", host_name(), &nonce[24..]))
    }
}

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which runs of a shared database a worker can carry out: those started on its own machine, and
/// those whose workspace lies under a root it declared it reaches (`reins worker --workspace-root`,
/// a shared mount or a checkout at the same path). A run with no machine (from before machines
/// were recorded, or a row someone emptied) is nobody's unless the worker was told to adopt them.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    roots: Vec<std::path::PathBuf>,
    adopt_legacy: bool,
}

impl Reach {
    pub fn new(roots: Vec<std::path::PathBuf>, adopt_legacy: bool) -> Self {
        Self {
            roots,
            adopt_legacy,
        }
    }

    pub fn covers(&self, machine: Option<&str>, workspace: &str) -> bool {
        match machine {
            None => self.adopt_legacy,
            Some(m) if m == host_name() => true,
            Some(_) => {
                let workspace = std::path::Path::new(workspace);
                self.roots.iter().any(|root| workspace.starts_with(root))
            }
        }
    }
}

/// True only when `owner` names a process on this host that no longer exists, or whose pid now
/// belongs to a process that started at another time.
pub fn is_gone(owner: &str) -> bool {
    let mut parts = owner.rsplitn(4, ':');
    let (Some(_nonce), Some(start), Some(pid), Some(host)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    if host != host_name() || !std::path::Path::new("/proc/self/stat").exists() {
        return false;
    }
    match start_time(pid) {
        None => true,
        Some(now) => now != start,
    }
}

/// The process's start time in clock ticks since boot: field 22 of /proc/PID/stat.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 2 (the command) is in parentheses and may hold spaces: count from the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The name this machine goes by in runs and decisions: `REINS_HOST` if set (a container's host
/// name says little), else the system's host name.
pub fn host_name() -> String {
    if let Some(name) = std::env::var("REINS_HOST")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
    {
        return name;
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_reaches_its_own_machines_runs_and_those_under_its_roots() {
        let reach = Reach::new(vec![std::path::PathBuf::from("/srv/work")], false);
        assert!(!reach.covers(None, "/srv/work/api"), "a run with no machine is nobody's");
        let adopting = Reach::new(Vec::new(), true);
        assert!(adopting.covers(None, "/anywhere"), "unless the worker adopts them");
        assert!(reach.covers(Some(&host_name()), "/home/me/project"));
        assert!(reach.covers(Some("build-7"), "/srv/work/api"));
        assert!(
            !reach.covers(Some("build-7"), "/srv/workshop/api"),
            "a root is a directory, not a prefix of a name"
        );
        assert!(!reach.covers(Some("build-7"), "/home/me/project"));
        assert!(!Reach::default().covers(Some("build-7"), "/srv/work/api"));
    }

    #[test]
    fn this_process_is_alive() {
        assert!(!is_gone(&WorkerId::current().to_string()));
    }

    #[test]
    fn a_process_that_exited_is_gone() -> anyhow::Result<()> {
        let mut child = std::process::Command::new("sleep").arg("0").spawn()?;
        let pid = child.id();
        let start = start_time(pid);
        child.wait()?;
        let owner = format!("{}:{pid}:{}:abc", host_name(), start.unwrap_or(1));
        assert!(is_gone(&owner), "{owner} exited");
        Ok(())
    }

    #[test]
    fn a_reused_pid_is_not_the_same_worker() {
        let me = std::process::id();
        let wrong_start = start_time(me).unwrap_or(0) + 1;
        assert!(is_gone(&format!("{}:{me}:{wrong_start}:abc", host_name())));
    }

    #[test]
    fn unknowable_owners_count_as_alive() {
        assert!(
            !is_gone("some-other-host:1:1:abc"),
            "another machine: only the lease decides"
        );
        assert!(!is_gone("garbage"));
        assert!(!is_gone(&format!("{}:notapid:1:abc", host_name())));
        assert!(!is_gone(&format!(
            "{}:{}:?:abc",
            host_name(),
            std::process::id()
        )));
    }
}
