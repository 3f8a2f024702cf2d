//! What the operating system says about processes, read from /proc on its own: the stories check
//! the harness's claims about orphans and dead workers against it.

/// This machine's name, as a worker id records it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// Fields of /proc/PID/stat after the command (which may hold spaces).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The process's start time in clock ticks since boot (field 22).
pub fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// True while `pid` is the process that started at `start` and has not exited (a zombie has).
pub fn is_running(pid: u32, start: u64) -> bool {
    match stat_fields(pid) {
        Some(f) => {
            f.get(19).and_then(|s| s.parse::<u64>().ok()) == Some(start)
                && !matches!(f.first().map(String::as_str), Some("Z" | "X"))
        }
        None => false,
    }
}

/// Live (not zombie) processes in process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            stat_fields(*pid).is_some_and(|f| {
                !matches!(f.first().map(String::as_str), Some("Z" | "X"))
                    && f.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid)
            })
        })
        .collect()
}
