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

/// Every process's id with the fields of its `/proc/PID/stat` after the name (state, ppid, pgrp,
/// session, …). The name is in parentheses and may hold spaces: fields count from the last ')'.
fn stats() -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = stat[stat.rfind(')')? + 1..].to_owned();
            Some((pid, rest))
        })
        .collect()
}

/// The live (not zombie) processes in the process group `pgid` or in the session it leads.
pub fn group_members(pgid: u32) -> Vec<u32> {
    stats()
        .into_iter()
        .filter(|(_, rest)| {
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let pgrp = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
            let session = fields.next().and_then(|f| f.parse::<u32>().ok());
            (pgrp == Some(pgid) || session == Some(pgid)) && !matches!(state, Some("Z" | "X"))
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// Every process below `root`, by parent links.
pub fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = stats()
        .into_iter()
        .filter_map(|(pid, rest)| Some((pid, rest.split_whitespace().nth(1)?.parse().ok()?)))
        .collect();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, parent) in &parents {
            if *parent == p && !out.contains(pid) {
                out.push(*pid);
                frontier.push(*pid);
            }
        }
    }
    out
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

    #[tokio::test]
    async fn a_line_past_its_cap_fails_the_stream_and_shorter_lines_pass() {
        use tokio::io::AsyncReadExt;
        let mut ok = Capped::new(&b"0123\n4567\n89"[..], 4);
        let mut out = String::new();
        ok.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "0123\n4567\n89");
        let mut long = Capped::new(&b"0123\n45678\n"[..], 4);
        let err = long.read_to_string(&mut String::new()).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_reused_pid_is_not_the_recorded_process() {
        let me = std::process::id();
        let start = start_time(me).unwrap_or(0);
        assert!(is_running(me, start));
        assert!(!is_running(me, start + 1));
    }
}

/// A program Reins talks to over its stdin and stdout (an external agent, an MCP server): it runs
/// in the workspace, leads its own process group (ended, with all it started, when this is
/// dropped), gets only the environment it is given, and writes its stderr to a bounded, redacted
/// log and an in-memory tail.
pub struct Piped {
    pub pid: u32,
    /// Started through the confinement helper, which ends everything the program started when
    /// it is told to stop.
    confined: bool,
    pub child: tokio::process::Child,
    /// The last of what it wrote to stderr.
    pub stderr: crate::stderr::Tail,
}

/// What a piped program is started with.
pub struct PipedSpec<'a> {
    pub argv: &'a [String],
    /// `argv` starts the confinement helper (`HELPER __contain … -- PROGRAM …`).
    pub confined: bool,
    pub root: &'a std::path::Path,
    /// Variables inherited from Reins' own environment, then `passed` ones too.
    pub base_env: &'a [&'a str],
    pub passed: &'a [String],
    /// Fixed values.
    pub set: &'a [(&'a str, &'a str)],
    /// Values from the keyring: set, and redacted from its stderr log.
    pub keys: &'a [(String, crate::keys::Secret)],
    pub log: Option<std::path::PathBuf>,
}

/// Why a piped program did not start; each caller words it for its own kind of program.
#[derive(Debug)]
pub enum PipedError {
    EmptyCommand,
    Spawn { program: String, source: std::io::Error },
    ExitedAtOnce,
    NoStreams,
}

/// The file `program` names: itself when it has a `/`, else the first on `path_var` (a `PATH`).
pub fn find_program(
    program: &str,
    path_var: Option<&std::ffi::OsStr>,
) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        return Some(std::path::PathBuf::from(program)).filter(|p| p.is_file());
    }
    std::env::split_paths(path_var?)
        .map(|d| d.join(program))
        .find(|c| c.is_file())
}

/// Starts a piped program; its stdin and stdout are the caller's to speak over.
pub fn spawn_piped(
    spec: PipedSpec<'_>,
) -> Result<(Piped, tokio::process::ChildStdin, Capped<tokio::process::ChildStdout>), PipedError> {
    use tokio::io::AsyncReadExt;
    let (program, args) = spec.argv.split_first().ok_or(PipedError::EmptyCommand)?;
    if spec.confined {
        // The helper starts; a program that is not there must still read as one that could not
        // be started, as it would without the helper.
        let target = spec
            .argv
            .iter()
            .position(|a| a == "--")
            .and_then(|i| spec.argv.get(i + 1))
            .ok_or(PipedError::EmptyCommand)?;
        if find_program(target, std::env::var_os("PATH").as_deref()).is_none() {
            return Err(PipedError::Spawn {
                program: target.clone(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            });
        }
    }
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(spec.root)
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        // The helper must hear a stop it can act on (see `Drop`); a plain program is killed.
        .kill_on_drop(!spec.confined);
    for name in spec
        .base_env
        .iter()
        .copied()
        .chain(spec.passed.iter().map(String::as_str))
    {
        if let Some(v) = std::env::var_os(name) {
            cmd.env(name, v);
        }
    }
    for (name, value) in spec.set {
        cmd.env(name, value);
    }
    for (name, secret) in spec.keys {
        cmd.env(name, secret.expose());
    }
    let mut child = cmd.spawn().map_err(|source| PipedError::Spawn {
        program: program.clone(),
        source,
    })?;
    let pid = child.id().ok_or(PipedError::ExitedAtOnce)?;
    let (Some(stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(PipedError::NoStreams);
    };
    let tail = crate::stderr::Tail::default();
    let secrets = spec.keys.iter().map(|(_, s)| s.expose().to_owned()).collect();
    let mut sink = crate::stderr::Sink::new(tail.clone(), spec.log, secrets);
    // Started through the confinement helper: the program's own command line is what a person
    // wants to read, not the profile.
    let shown = match spec.argv.iter().position(|a| a == "--") {
        Some(i) if spec.confined => {
            format!("{} (confined)", spec.argv[i + 1..].join(" "))
        }
        _ => spec.argv.join(" "),
    };
    sink.note(&format!("started {shown} (process {pid})"));
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.push(&buf[..n]);
        }
        sink.flush();
    });
    Ok((
        Piped {
            pid,
            confined: spec.confined,
            child,
            stderr: tail,
        },
        stdin,
        Capped::new(stdout, MAX_LINE),
    ))
}

/// The longest line a piped program may send (one JSON-RPC message): past it the stream fails,
/// instead of the reader buffering without bound while it waits for the line's end.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// A reader that fails once a line runs past its cap.
pub struct Capped<R> {
    inner: R,
    /// Bytes since the last newline.
    run: usize,
    max: usize,
}

impl<R> Capped<R> {
    pub fn new(inner: R, max: usize) -> Self {
        Self { inner, run: 0, max }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Capped<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = &polled {
            let read = &buf.filled()[before..];
            // Each line's length: the first continues the line read before, the last goes on.
            let mut longest = 0;
            let mut run = self.run;
            for (i, piece) in read.split(|b| *b == b'\n').enumerate() {
                if i > 0 {
                    run = 0;
                }
                run += piece.len();
                longest = longest.max(run);
            }
            self.run = run;
            if longest > self.max {
                // A failed read hands over nothing.
                buf.set_filled(before);
                return std::task::Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("the program sent a line over {} MiB", self.max / (1024 * 1024)),
                )));
            }
        }
        polled
    }
}

impl Piped {
    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Piped {
    /// Ends the program's whole process group.
    fn drop(&mut self) {
        let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(self.pid).unwrap_or(0))
        else {
            return;
        };
        if self.confined {
            // The helper is the subreaper of everything the program started, `setsid` daemons
            // included, which a group kill misses: told to stop, it ends them all, then itself.
            // Whatever of the group is left after a grace period is killed.
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            // It takes milliseconds: waited for here (a quarter second at most), so that a Reins
            // about to exit leaves nothing running behind it.
            for _ in 0..50 {
                if !matches!(self.child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(2));
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            });
            return;
        }
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        let _ = self.child.start_kill();
    }
}
