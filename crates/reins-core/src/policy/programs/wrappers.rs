//! Wrappers that run one command unchanged but for a time limit, a priority, buffering, timing or
//! its environment (`timeout 60 cargo test`, `nice make`, `env RUST_LOG=debug cargo run`), and
//! xargs, which runs one command with arguments from its input. Reins classifies the wrapped
//! command in the wrapper's place, so an everyday command is not high because of its wrapper and a
//! dangerous one is not hidden by it. An option a wrapper is given that Reins does not follow
//! (`env -S`, `time -o`, `ionice -p`) leaves the wrapper high.

/// Where the wrapped command starts, and what the wrapper adds to it.
#[derive(Debug, PartialEq, Eq)]
pub struct Unwrapped {
    /// The index, among the wrapper's arguments, of the wrapped program.
    pub at: usize,
    /// `env`'s `NAME=VALUE` operands: prefix assignments of the wrapped command.
    pub env: Vec<(String, String)>,
    /// xargs: the wrapped command's further arguments come from its input.
    pub from_input: bool,
}

/// The wrapped command of `program` with these arguments (None where an argument is not a
/// literal), or None when `program` is not such a wrapper or is given an option Reins does not
/// follow.
pub fn unwrap(program: &str, args: &[Option<String>]) -> Option<Unwrapped> {
    let lits: Vec<&str> = args.iter().map(|a| a.as_deref().unwrap_or("\0")).collect();
    let found = found(program, &lits)?;
    // The wrapper's own options and operands must be literal; the wrapped command's need not.
    args[..found.at].iter().all(Option::is_some).then_some(found)
}

fn found(program: &str, lits: &[&str]) -> Option<Unwrapped> {
    let (at, env) = match program {
        "timeout" => {
            let at = options(lits, &["--preserve-status", "--foreground", "-v", "--verbose"], &['s', 'k'], &["--signal", "--kill-after"])?;
            // The duration, then the command.
            (at + 1, Vec::new())
        }
        "nice" => {
            let mut at = 0;
            if let Some(a) = lits.first() {
                if a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit()) && a.len() > 1 {
                    at = 1;
                } else {
                    at = options(lits, &[], &['n'], &["--adjustment"])?;
                }
            }
            (at, Vec::new())
        }
        "ionice" => (options(lits, &["-t", "--ignore"], &['c', 'n'], &["--class", "--classdata"])?, Vec::new()),
        "stdbuf" => (options(lits, &[], &['i', 'o', 'e'], &["--input", "--output", "--error"])?, Vec::new()),
        "time" => (options(lits, &["-p", "--portability"], &[], &[])?, Vec::new()),
        "command" => (options(lits, &["-p"], &[], &[])?, Vec::new()),
        "env" => {
            let mut at = options(lits, &["-i", "--ignore-environment"], &['u'], &["--unset"])?;
            let mut env = Vec::new();
            while let Some((k, v)) = lits.get(at).and_then(|a| a.split_once('=')) {
                if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return None;
                }
                env.push((k.to_owned(), v.to_owned()));
                at += 1;
            }
            (at, env)
        }
        "xargs" => {
            let at = xargs(lits)?;
            return (at < lits.len()).then_some(Unwrapped { at, env: Vec::new(), from_input: true });
        }
        _ => return None,
    };
    (at < lits.len()).then_some(Unwrapped { at, env, from_input: false })
}

/// The index of the first operand after the options: `flags` take no value, `short` letters take
/// one (attached or next), `long` names take one (`=value` or next). None on any other option.
fn options(lits: &[&str], flags: &[&str], short: &[char], long: &[&str]) -> Option<usize> {
    let mut i = 0;
    while let Some(a) = lits.get(i) {
        if *a == "--" {
            return Some(i + 1);
        }
        if !a.starts_with('-') || *a == "-" {
            return Some(i);
        }
        if flags.contains(a) {
            i += 1;
            continue;
        }
        if let Some(name) = long.iter().find(|l| a.split_once('=').map_or(*a, |(k, _)| k) == **l) {
            i += if a.len() > name.len() { 1 } else { 2 };
            continue;
        }
        let mut chars = a[1..].chars();
        match chars.next() {
            Some(c) if !a.starts_with("--") && short.contains(&c) => {
                i += if chars.as_str().is_empty() { 2 } else { 1 };
            }
            _ => return None,
        }
    }
    Some(i)
}

/// xargs' options, GNU's set; the index of the command (or the end: xargs runs `echo`).
fn xargs(lits: &[&str]) -> Option<usize> {
    const FLAGS: &[char] = &['0', 'r', 't', 'p', 'x', 'o'];
    const VALUE: &[char] = &['a', 'd', 'E', 'I', 'L', 'n', 'P', 's'];
    const OPTIONAL: &[char] = &['e', 'i', 'l'];
    const LONG_FLAGS: &[&str] = &["--null", "--no-run-if-empty", "--verbose", "--interactive", "--exit", "--open-tty"];
    const LONG_VALUE: &[&str] = &["--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--eof", "--replace", "--max-lines"];
    let mut i = 0;
    while let Some(a) = lits.get(i) {
        if *a == "--" {
            return Some(i + 1);
        }
        if !a.starts_with('-') || *a == "-" {
            return Some(i);
        }
        if let Some(long) = a.strip_prefix("--") {
            let key = long.split_once('=').map_or(long, |(k, _)| k);
            let key = format!("--{key}");
            if LONG_FLAGS.contains(&key.as_str()) {
                i += 1;
            } else if LONG_VALUE.contains(&key.as_str()) {
                // `--replace` and `--max-lines` take theirs only attached.
                let attached = long.contains('=') || matches!(key.as_str(), "--replace" | "--max-lines" | "--eof");
                i += if attached { 1 } else { 2 };
            } else {
                return None;
            }
            continue;
        }
        let cluster: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        let mut next = 1;
        while j < cluster.len() {
            let c = cluster[j];
            if FLAGS.contains(&c) {
                j += 1;
            } else if VALUE.contains(&c) {
                if j + 1 == cluster.len() {
                    next = 2;
                }
                break;
            } else if OPTIONAL.contains(&c) {
                break;
            } else {
                return None;
            }
        }
        i += next;
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(program: &str, cmd: &str) -> Option<usize> {
        let args: Vec<Option<String>> = cmd.split_whitespace().map(|s| Some(s.to_owned())).collect();
        unwrap(program, &args).map(|u| u.at)
    }

    #[test]
    fn finds_the_wrapped_command() {
        assert_eq!(at("timeout", "60 cargo test"), Some(1));
        assert_eq!(at("timeout", "-s KILL -k 5 10m npm test"), Some(5));
        assert_eq!(at("timeout", "--signal=TERM 5 ls"), Some(2));
        assert_eq!(at("nice", "-n 10 make"), Some(2));
        assert_eq!(at("nice", "-10 make"), Some(1));
        assert_eq!(at("nice", "make"), Some(0));
        assert_eq!(at("stdbuf", "-oL -eL cargo test"), Some(2));
        assert_eq!(at("env", "RUST_LOG=debug cargo run"), Some(1));
        assert_eq!(at("env", "-i PATH=/bin A=1 ls"), Some(3));
        assert_eq!(at("xargs", "-0 -n1 echo"), Some(2));
        assert_eq!(at("xargs", "-I {} cp {} out/"), Some(2));
        assert_eq!(at("xargs", "-0n1 grep x"), Some(1));
        assert_eq!(at("xargs", "-P4 -n 2 gzip"), Some(3));
        assert_eq!(at("command", "-p ls"), Some(1));
    }

    #[test]
    fn options_it_does_not_follow_leave_the_wrapper() {
        assert_eq!(at("env", "-S sh -c id"), None);
        assert_eq!(at("env", "-C /tmp ls"), None);
        assert_eq!(at("env", "--split-string=sh"), None);
        assert_eq!(at("time", "-o /tmp/x ls"), None);
        assert_eq!(at("ionice", "-p 1"), None);
        assert_eq!(at("xargs", "--process-slot-var=X sh"), None);
        assert_eq!(at("timeout", "10"), None);
        assert_eq!(at("env", "A=1"), None);
        assert!(unwrap("timeout", &[None, Some("ls".into())]).is_none());
        assert_eq!(at("nohup", "ls"), None);
    }
}
