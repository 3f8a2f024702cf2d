//! Child processes a tool starts for a run. Each leads a new session (and process group), so the
//! harness can end it and everything it started, even jobs that bash's job control (`set -m`) put
//! in process groups of their own; each is recorded with its pid and start time, so after a crash
//! the next worker can find the orphans — still running, and still the same processes — and end
//! them before anything runs again.

use std::process::Command;
use std::time::{Duration, Instant};

use process_wrap::std::{ChildWrapper, CommandWrap, ProcessSession};

/// A child started by `spawn_in_group`.
pub type Spawned = Box<dyn ChildWrapper>;

/// Starts `cmd` as the leader of a new session and process group (its pid is both ids).
pub fn spawn_in_group(cmd: Command) -> std::io::Result<Spawned> {
    CommandWrap::from(cmd).wrap(ProcessSession).spawn()
}

/// The process's start time (clock ticks since boot), the other half of its identity.
pub fn start_time(pid: u32) -> Option<u64> {
    crate::worker::start_time(pid)
}

/// True while `pid` is the very process that started at `start_time` (not a reused pid), and has
/// not exited (a zombie counts as exited).
pub fn is_running(pid: u32, start_time: u64) -> bool {
    if crate::worker::start_time(pid) != Some(start_time) {
        return false;
    }
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    let state = state
        .as_deref()
        .and_then(|s| s.rfind(')').map(|i| &s[i + 1..]))
        .and_then(|rest| rest.split_whitespace().next());
    !matches!(state, Some("Z" | "X") | None)
}

/// The live (not zombie) processes in the process group `pgid` or in the session it leads.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                return false;
            };
            // After the name: state, ppid, pgrp, session.
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let pgrp = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
            let session = fields.next().and_then(|f| f.parse::<u32>().ok());
            (pgrp == Some(pgid) || session == Some(pgid)) && !matches!(state, Some("Z" | "X"))
        })
        .collect()
}

/// Ends what a recorded leader started: SIGTERM to its group and to every process of its session
/// (jobs in groups of their own included), then SIGKILL after `grace` to whatever is left. An id
/// now led by another process (the number was reused) is left alone. Returns true when nothing of
/// it is left.
pub fn end_group(pgid: u32, leader_start: u64, grace: Duration) -> bool {
    let Ok(group) = i32::try_from(pgid) else {
        return false;
    };
    let reused = crate::worker::start_time(pgid).is_some_and(|t| t != leader_start);
    if reused || group_members(pgid).is_empty() {
        return true;
    }
    signal_all(group, pgid, rustix::process::Signal::TERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if group_members(pgid).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal_all(group, pgid, rustix::process::Signal::KILL);
    for _ in 0..50 {
        if group_members(pgid).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The group, and each member of the session one by one (a job's own group would not hear the
/// group signal).
fn signal_all(group: i32, pgid: u32, signal: rustix::process::Signal) {
    use rustix::process::Pid;
    if let Some(id) = Pid::from_raw(group) {
        // ESRCH (the group is already gone) is the outcome we want anyway.
        let _ = rustix::process::kill_process_group(id, signal);
    }
    for member in group_members(pgid) {
        if let Some(pid) = i32::try_from(member).ok().and_then(Pid::from_raw) {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_ended_with_its_children() -> anyhow::Result<()> {
        // A shell that starts a grandchild and waits: both must go.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 600 & wait"]);
        let mut child = spawn_in_group(cmd)?;
        let pid = child.id();
        let start = start_time(pid).ok_or_else(|| anyhow::anyhow!("no start time"))?;
        assert!(is_running(pid, start));
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(group_members(pid).len(), 2, "the shell and its sleep");
        assert!(end_group(pid, start, Duration::from_secs(2)));
        child.wait()?;
        assert!(
            group_members(pid).is_empty(),
            "nothing of the group is left"
        );
        Ok(())
    }

    /// F9: `set -m` puts a background job in a process group of its own, so ending the leader's
    /// group left it running after its step. It is still in the leader's session.
    #[test]
    fn a_job_in_its_own_group_is_ended_with_the_session() -> anyhow::Result<()> {
        let mut cmd = Command::new("bash");
        cmd.args(["-c", "set -m; sleep 97 >/dev/null 2>&1 & echo $!"])
            .stdout(std::process::Stdio::piped());
        let mut child = spawn_in_group(cmd)?;
        let pid = child.id();
        let start = start_time(pid).ok_or_else(|| anyhow::anyhow!("no start time"))?;
        let mut out = String::new();
        if let Some(stdout) = child.stdout().as_mut() {
            use std::io::Read as _;
            stdout.read_to_string(&mut out)?;
        }
        child.wait()?;
        let job: u32 = out.trim().parse()?;
        let job_start = start_time(job).ok_or_else(|| anyhow::anyhow!("the job is not running"))?;
        assert_ne!(job, pid);
        assert!(is_running(job, job_start), "the job outlived the leader");
        assert!(group_members(pid).contains(&job));
        assert!(end_group(pid, start, Duration::from_secs(2)));
        assert!(!is_running(job, job_start), "the job was ended with the session");
        Ok(())
    }

    #[test]
    fn a_reused_pid_is_not_the_recorded_process() {
        let me = std::process::id();
        let start = start_time(me).unwrap_or(0);
        assert!(is_running(me, start));
        assert!(!is_running(me, start + 1));
    }
}
