//! `shell.exec`: a command string or an argv, run in the workspace with a timeout, capped output, a
//! small fixed environment and its own process group. An argv runs as given; a command string that
//! is one plain simple command of literals runs as its argv; anything else runs as `bash -c` with the
//! exact string that was classified and approved — never a string re-joined from parts.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::action::{CommandForm, ShellCommand};
use crate::policy::shell::{self, Analysis, Place};

/// Bytes of stdout and of stderr kept (the head and the tail); the rest is counted and dropped.
pub const OUTPUT_CAP: usize = 64 * 1024;

/// Environment variables a command inherits; everything else (API keys included) stays out.
const PASSED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR",
];

impl ShellCommand {
    pub fn analyse(&self, place: Place<'_>) -> Analysis {
        match &self.form {
            CommandForm::Line(c) => shell::analyse_command(c, place),
            CommandForm::Argv(v) => shell::analyse_argv(v, place),
        }
    }

    /// The program and arguments that will be executed.
    pub fn argv(&self, analysis: &Analysis) -> Vec<String> {
        match (&self.form, &analysis.direct_argv) {
            (CommandForm::Argv(v), _) => v.clone(),
            (CommandForm::Line(_), Some(argv)) => argv.clone(),
            (CommandForm::Line(c), None) => vec![
                "bash".into(),
                "--noprofile".into(),
                "--norc".into(),
                "-c".into(),
                c.clone(),
            ],
        }
    }
}

/// What a command did.
#[derive(Clone, Debug)]
pub struct ShellOutcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub stdout: Captured,
    pub stderr: Captured,
    pub elapsed: Duration,
    /// How it ran, in words: "confined (Landlock ABI 7, seccomp, mount layer): no network, writes
    /// inside the workspace", or why it ran unconfined.
    pub contained: String,
    /// What the profile stopped, in words.
    pub blocked: Vec<String>,
    /// The program a person would name: `make` for `bash -c "make all"`, not bash.
    pub program: String,
}

#[derive(Clone, Debug, Default)]
pub struct Captured {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub total: u64,
}

impl Captured {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let half = OUTPUT_CAP / 2;
        let room = half.saturating_sub(self.head.len());
        let (to_head, rest) = chunk.split_at(room.min(chunk.len()));
        self.head.extend_from_slice(to_head);
        if !rest.is_empty() {
            self.tail.extend_from_slice(rest);
            if self.tail.len() > half {
                let cut = self.tail.len() - half;
                self.tail.drain(..cut);
            }
        }
    }

    pub fn text(&self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            s.push_str(&format!("\n… {} bytes cut …\n", self.total - kept));
        }
        s.push_str(&String::from_utf8_lossy(&self.tail));
        s
    }
}

impl ShellOutcome {
    pub fn ok(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// The text the agent gets back.
    pub fn report(&self) -> String {
        let status = if self.timed_out {
            "timed out and was stopped".to_owned()
        } else {
            match (self.exit_code, self.signal) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("killed by signal {s}"),
                (None, None) => "ended".into(),
            }
        };
        // The first line says how it ended and starts the output, for one-line summaries.
        let first = String::from_utf8_lossy(&self.stdout.head)
            .lines()
            .chain(String::from_utf8_lossy(&self.stderr.head).lines())
            .find(|l| !l.trim().is_empty())
            .map(|l| format!(": {}", l.chars().take(120).collect::<String>()))
            .unwrap_or_default();
        let mut out = format!(
            "{status} after {:.1} s{first}\n",
            self.elapsed.as_secs_f64()
        );
        out.push_str(&format!("--- {}\n", self.contained));
        for b in &self.blocked {
            out.push_str(&format!("--- blocked: {b}\n"));
        }
        if self.stdout.total > 0 {
            out.push_str(&format!(
                "--- stdout ({} bytes)\n{}",
                self.stdout.total,
                self.stdout.text()
            ));
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        if self.stderr.total > 0 {
            out.push_str(&format!(
                "--- stderr ({} bytes)\n{}",
                self.stderr.total,
                self.stderr.text()
            ));
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }
}

/// Runs `argv` in `cwd` with the fixed environment, in its own process group, confined by
/// `confined`'s profile when there is one. `started` is told the child's pid before anything is
/// awaited, so the caller can record it. The group is ended on timeout and when the command
/// finishes (nothing it started outlives it).
pub fn run(
    argv: &[String],
    cwd: &Path,
    timeout: Duration,
    confined: Result<&crate::contain::Confined, &str>,
    started: impl FnOnce(u32),
) -> std::io::Result<ShellOutcome> {
    let (program, rest) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"))?;
    let mut cmd = match confined {
        Ok(c) => c.command(argv),
        Err(_) => {
            let mut cmd = Command::new(program);
            cmd.args(rest);
            cmd
        }
    };
    cmd.current_dir(cwd)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for key in PASSED_ENV {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd.env("PWD", cwd);
    if let Ok(c) = confined {
        cmd.env("TMPDIR", c.tmp());
    }
    let began = Instant::now();
    let mut child = crate::process::spawn_in_group(cmd)?;
    let pid = child.id();
    let leader_start = crate::process::start_time(pid).unwrap_or(0);
    started(pid);
    let readers: Vec<_> = [
        child
            .stdout()
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child
            .stderr()
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .map(|pipe| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut cap = Captured::default();
            if let Some(mut pipe) = pipe {
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    cap.push(&buf[..n]);
                }
            }
            let _ = tx.send(cap);
        });
        rx
    })
    .collect();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if began.elapsed() >= timeout {
            timed_out = true;
            crate::process::end_group(pid, leader_start, Duration::from_secs(2));
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Whatever the command left running in its group goes with it (its pipes would hold the
    // readers open otherwise).
    crate::process::end_group(pid, leader_start, Duration::from_millis(500));
    // A process that left the group (setsid) may still hold a pipe: stop waiting for it.
    let mut outputs = readers
        .into_iter()
        .map(|rx| rx.recv_timeout(Duration::from_secs(2)).unwrap_or_default());
    let stdout = outputs.next().unwrap_or_default();
    let stderr = outputs.next().unwrap_or_default();
    use std::os::unix::process::ExitStatusExt as _;
    let program = program_named(argv);
    let (contained, blocked) = confinement(confined, &program, cwd, [&stdout, &stderr]);
    Ok(ShellOutcome {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        stdout,
        stderr,
        elapsed: began.elapsed(),
        contained,
        blocked,
        program,
    })
}

/// The program a person would name: `make` for `bash -c "make all"`, not bash.
fn program_named(argv: &[String]) -> String {
    let line = match argv {
        [_, .., c, line] if c == "-c" => line.split_whitespace().next(),
        _ => argv.first().map(String::as_str),
    };
    line.map(|p| p.rsplit('/').next().unwrap_or(p).to_owned())
        .unwrap_or_default()
}

/// How the command ran, and what its profile stopped: protected paths it created (removed now)
/// and the refusals it reported in its output.
fn confinement(
    confined: Result<&crate::contain::Confined, &str>,
    program: &str,
    cwd: &Path,
    output: [&Captured; 2],
) -> (String, Vec<String>) {
    let c = match confined {
        Ok(c) => c,
        Err(why) => return (why.to_owned(), Vec::new()),
    };
    let said = c.profile.said(cwd);
    let contained = match c.enforced() {
        Some(e) => format!("{}: {said}", e.said()),
        None => "the confinement helper did not start the command".into(),
    };
    let mut blocked = c.sweep_said(program, cwd);
    for captured in output {
        let room = 8usize.saturating_sub(blocked.len());
        blocked.extend(
            crate::contain::refusals(&captured.text())
                .take(room)
                .map(|line| format!("{program} was refused: {line}")),
        );
    }
    (contained, blocked)
}
