//! The confinement helper: the Reins binary started again as `reins __contain --profile JSON
//! [--report FILE] [--relay FILE | --stage FILE | --staged-net] -- PROGRAM ARGS…`. Before any thread starts, it applies the profile to itself,
//! makes itself the subreaper, writes what the kernel enforced to the report file, starts the
//! program, and when the program ends, ends every descendant it left behind. Its arguments are
//! read strictly: anything it does not expect stops it before the program starts.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::profile::Profile;
use super::relay::Plan;

/// The hidden subcommand's name, the first argument after the binary's.
pub const SUBCOMMAND: &str = "__contain";

/// The exit status when the helper itself fails (bad arguments, confinement not applied): the
/// program never started.
pub const FAILED: u8 = 125;
/// The exit status when the program could not be started.
pub const NOT_STARTED: u8 = 127;

/// Runs the helper when this process was started as one; None otherwise. Binaries call it first,
/// before anything starts a thread.
pub fn dispatch() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(SUBCOMMAND)) {
        return None;
    }
    Some(main(args.collect()))
}

struct Call {
    profile: Profile,
    report: Option<PathBuf>,
    relay: Option<Plan>,
    /// Staged: the view to run in, and the arguments the helper is started with again inside it
    /// (these, without `--stage`).
    stage: Option<(super::stage::Plan, Vec<OsString>)>,
    /// Started by a staging helper inside the view's own network namespace (checked before it
    /// counts): Internet sockets reach the view's name server.
    staged_net: bool,
    argv: Vec<OsString>,
}

fn parse(args: Vec<OsString>) -> Result<Call, String> {
    let mut profile = None;
    let mut report = None;
    let mut relay = None;
    let mut stage = None;
    let mut staged_net = false;
    let mut inner: Vec<OsString> = Vec::new();
    let mut it = args.into_iter();
    loop {
        let Some(arg) = it.next() else {
            return Err("no program: expected `-- PROGRAM [ARGS…]`".into());
        };
        match arg.to_str() {
            Some("--profile") if profile.is_none() => {
                let text = it.next().ok_or("--profile needs a value")?;
                inner.extend([arg.clone(), text.clone()]);
                let text = text.to_str().ok_or("--profile is not UTF-8")?;
                let p: Profile = serde_json::from_str(text)
                    .map_err(|e| format!("--profile is not a profile: {e}"))?;
                p.check()?;
                profile = Some(p);
            }
            Some("--report") if report.is_none() => {
                let path = PathBuf::from(it.next().ok_or("--report needs a value")?);
                if !path.is_absolute() {
                    return Err("--report must be an absolute path".into());
                }
                inner.extend([arg.clone(), path.clone().into_os_string()]);
                report = Some(path);
            }
            Some("--relay") if relay.is_none() => {
                let path = PathBuf::from(it.next().ok_or("--relay needs a value")?);
                if !path.is_absolute() {
                    return Err("--relay must be an absolute path".into());
                }
                inner.extend([arg.clone(), path.clone().into_os_string()]);
                let text = std::fs::read(&path)
                    .map_err(|e| format!("--relay {}: {e}", path.display()))?;
                let plan: Plan = serde_json::from_slice(&text)
                    .map_err(|e| format!("--relay is not a relay plan: {e}"))?;
                plan.check()?;
                relay = Some(plan);
            }
            Some("--stage") if stage.is_none() => {
                let path = PathBuf::from(it.next().ok_or("--stage needs a value")?);
                if !path.is_absolute() {
                    return Err("--stage must be an absolute path".into());
                }
                let text = std::fs::read(&path)
                    .map_err(|e| format!("--stage {}: {e}", path.display()))?;
                let plan: super::stage::Plan = serde_json::from_slice(&text)
                    .map_err(|e| format!("--stage is not a staging plan: {e}"))?;
                plan.check()?;
                stage = Some(plan);
            }
            Some("--staged-net") if !staged_net => staged_net = true,
            Some("--") => break,
            _ => return Err(format!("unexpected argument {}", arg.to_string_lossy())),
        }
    }
    let argv: Vec<OsString> = it.collect();
    if argv.is_empty() {
        return Err("no program after --".into());
    }
    let profile = profile.ok_or("--profile is required")?;
    if staged_net && (stage.is_some() || relay.is_some()) {
        return Err("--staged-net is given to the helper a staging helper starts, alone".into());
    }
    let stage = match stage {
        Some(plan) => {
            // The program may write the view and its own temp dir; the layer's copy lies
            // beyond both.
            if profile.write.iter().any(|w| plan.out.starts_with(w)) {
                return Err("the staging plan's out lies where the program may write".into());
            }
            inner.push("--".into());
            inner.extend(argv.iter().cloned());
            Some((plan, inner))
        }
        None => None,
    };
    Ok(Call {
        profile,
        report,
        relay,
        stage,
        staged_net,
        argv,
    })
}

fn main(args: Vec<OsString>) -> ExitCode {
    let call = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("reins: confinement helper: {e}");
            return ExitCode::from(FAILED);
        }
    };
    if let Some((plan, inner)) = call.stage {
        return super::stage::run(&plan, inner);
    }
    // Opened before the rules apply: the report file lies outside what the program may write.
    let mut report = match call.report.as_ref().map(|p| {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(p)
    }) {
        Some(Ok(f)) => Some(f),
        Some(Err(e)) => {
            eprintln!("reins: confinement helper: cannot write the report: {e}");
            return ExitCode::from(FAILED);
        }
        None => None,
    };
    if call.staged_net && !super::netns::isolated() {
        eprintln!("reins: confinement helper: --staged-net outside a network namespace of its own");
        return ExitCode::from(FAILED);
    }
    let enforced = match super::kernel::apply(&call.profile, call.relay.as_ref(), call.staged_net)
    {
        Ok(e) => e,
        Err(e) => {
            eprintln!("reins: confinement helper: not confined, so not started: {e}");
            return ExitCode::from(FAILED);
        }
    };
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        eprintln!("reins: confinement helper: cannot become the subreaper: {e}");
        return ExitCode::from(FAILED);
    }
    if let Some(mut file) = report.take() {
        let line = serde_json::to_string(&enforced).unwrap_or_default();
        if writeln!(file, "{line}").is_err() {
            return ExitCode::from(FAILED);
        }
    }
    let (program, rest) = match call.argv.split_first() {
        Some(split) => split,
        None => return ExitCode::from(FAILED),
    };
    let child = match std::process::Command::new(program).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{}: {e}", program.to_string_lossy());
            return ExitCode::from(NOT_STARTED);
        }
    };
    let main_pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
    // Asked to stop (a timeout, a cancelled run, an agent session ending): the whole tree goes
    // first, so nothing is handed to init when this process is gone.
    if let Ok(mut signals) =
        signal_hook::iterator::Signals::new([libc::SIGTERM, libc::SIGINT, libc::SIGHUP])
    {
        std::thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                end_descendants();
                std::process::exit(128 + sig);
            }
        });
    }
    let ended = wait_for(main_pid);
    end_descendants();
    match ended {
        Ended::Code(code) => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)),
        Ended::Signal(sig) => {
            // Die the same way, so the caller sees the signal; if it is one this process ignores,
            // say it with the shell's number.
            let _ = nix::sys::signal::raise(sig);
            ExitCode::from(128u8.saturating_add(u8::try_from(sig as i32).unwrap_or(0)))
        }
    }
}

enum Ended {
    Code(i32),
    Signal(Signal),
}

/// Reaps children (orphans handed to the subreaper among them) until the program itself ends.
fn wait_for(main_pid: Pid) -> Ended {
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main_pid => return Ended::Code(code),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main_pid => return Ended::Signal(sig),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return Ended::Code(1),
        }
    }
}

/// Ends everything the program left running, or the whole tree when asked to stop: each round
/// kills every descendant there is now, and what their deaths hand to this process (the
/// subreaper) goes in the next, until this process has no child. Every descendant still alive has
/// an ancestor among its children, so none left means nothing to look for: the common case, a
/// program that left nothing behind, costs one call.
fn end_descendants() {
    let me = std::process::id();
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => {}
            Err(_) => return,
        }
        for pid in crate::process::descendants(me) {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        match waitpid(None, None) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => {}
            Err(_) => return,
        }
    }
}
