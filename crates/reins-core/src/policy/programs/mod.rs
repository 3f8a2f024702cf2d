//! What Reins knows about programs: which only read, which write the paths they are given, which run
//! other code, which talk to the network, which destroy. A program not listed here is not understood,
//! and so is high risk.

use super::Risk;

mod awk;
pub mod capabilities;
mod evaluates;
mod git;
mod make;
mod packages;
mod wrappers;
mod lists;
mod options;
mod sed;
mod variables;

pub use evaluates::holds_code;

pub use options::{operands_are_code, writes_through};
pub use variables::exec_capable_variable;
pub use wrappers::{unwrap, Unwrapped};

use options::{extracts, runs_through_option};

use lists::{BUILDERS, DESTRUCTIVE, INTERPRETERS, NETWORK, READERS, SHELLS, WRAPPERS, WRITERS};

/// How a program treats the paths it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Reads,
    Writes,
    Other,
}

#[derive(Clone, Debug)]
pub struct ProgramVerdict {
    pub class: Class,
    /// Each finding with its risk; empty means low.
    pub reasons: Vec<(Risk, String)>,
}

impl ProgramVerdict {
    fn low(class: Class) -> Self {
        Self {
            class,
            reasons: Vec::new(),
        }
    }
    fn one(class: Class, risk: Risk, reason: String) -> Self {
        Self {
            class,
            reasons: vec![(risk, reason)],
        }
    }
}

pub fn is_network(program: &str) -> bool {
    NETWORK.contains(&program)
}

/// Whether the program runs code it is given (shells, interpreters, awk, wrappers).
pub fn runs_code(program: &str) -> bool {
    SHELLS.contains(&program)
        || interpreter(program).is_some()
        || matches!(
            program,
            "awk" | "gawk" | "mawk" | "nawk" | "xargs" | "eval" | "source" | "."
        )
}

/// Whether the command turns encoded data back into bytes.
pub fn is_decoder(program: &str, args: &[String]) -> bool {
    let has = |flags: &[&str]| args.iter().any(|a| flags.contains(&a.as_str()));
    match program {
        "base64" | "base32" => has(&["-d", "--decode", "-D"]),
        "xxd" => has(&["-r", "-revert"]),
        "openssl" => true,
        "gzip" | "xz" | "bzip2" | "zstd" => has(&["-d", "--decompress", "--stdout", "-c"]),
        "gunzip" | "zcat" | "uudecode" | "unxz" | "bunzip2" | "zstdcat" | "rev" => true,
        _ => false,
    }
}

/// Programs whose arguments are text, not paths (`echo .env` names nothing).
pub fn ignores_paths(program: &str) -> bool {
    matches!(
        program,
        "echo" | "printf" | "true" | "false" | "expr" | "seq" | "sleep" | "yes" | ":"
    )
}

fn interpreter(program: &str) -> Option<&'static [&'static str]> {
    INTERPRETERS
        .iter()
        .find(|(name, _)| {
            *name == program
                || (*name == "python"
                    && program.starts_with("python")
                    && program[6..].chars().all(|c| c.is_ascii_digit() || c == '.'))
        })
        .map(|(_, flags)| *flags)
}

/// Classifies a program by its base name and its arguments (None where an argument is not a literal).
pub fn classify(program: &str, args: &[Option<String>]) -> ProgramVerdict {
    use Class::*;
    use Risk::*;
    let lits: Vec<&str> = args.iter().map(|a| a.as_deref().unwrap_or("")).collect();
    let has = |flags: &[&str]| lits.iter().any(|a| flags.contains(a));
    let p = program;

    if matches!(p, "reins" | "reins-app") {
        return ProgramVerdict::one(
            Other,
            High,
            "runs Reins itself: an agent must not approve, change policy or touch the harness that watches it".into(),
        );
    }
    if capabilities::entry(p).is_none() {
        return ProgramVerdict::one(
            Other,
            High,
            format!("`{p}` is not a program Reins knows, so it cannot say what it does"),
        );
    }
    if let Some((risk, why)) = evaluates::finding(p, args, &lits) {
        return ProgramVerdict::one(Other, risk, why);
    }
    if SHELLS.contains(&p) {
        let why = if has(&["-c"])
            || lits
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
        {
            format!(
                "`{p} -c` runs inline shell code: Reins cannot review what is inside the string"
            )
        } else if lits.is_empty() || lits.iter().all(|a| a.starts_with('-')) {
            format!("`{p}` reads commands from its input: whatever is piped in runs")
        } else {
            format!("`{p}` runs a shell script: any command at all")
        };
        return ProgramVerdict::one(Other, High, why);
    }
    if let Some(flags) = interpreter(p) {
        if !lits.is_empty()
            && lits
                .iter()
                .all(|a| matches!(*a, "--version" | "-V" | "--help" | "-h" | "-VV"))
        {
            return ProgramVerdict::low(Other);
        }
        // `-c`, `-cCODE`, or the letter inside a cluster (`-Ic`, `-we`, `-lne`).
        let inline = lits.iter().any(|a| {
            flags.contains(a)
                || flags.iter().any(|f| {
                    let cluster = a.strip_prefix('-').filter(|c| !c.starts_with('-'));
                    f.len() == 2
                        && cluster.is_some_and(|c| {
                            c.starts_with(&f[1..])
                                || (c.len() <= 5
                                    && c.chars().all(|ch| ch.is_ascii_alphabetic())
                                    && c.contains(&f[1..]))
                        })
                })
        });
        if inline {
            return ProgramVerdict::one(
                Other,
                High,
                format!("`{p}` runs inline code given on the command line: it can do anything"),
            );
        }
        if let Some(i) = lits.iter().position(|a| *a == "-m") {
            let module = lits.get(i + 1).copied().unwrap_or("");
            if matches!(
                module,
                "pip" | "ensurepip" | "http.server" | "pipx" | "venv"
            ) {
                return ProgramVerdict::one(
                    Other,
                    High,
                    format!("`{p} -m {module}` installs packages or serves files over the network"),
                );
            }
            return ProgramVerdict::one(
                Other,
                Medium,
                format!("runs the Python module {module} (project or installed code)"),
            );
        }
        if lits.is_empty() || lits.iter().all(|a| a.starts_with('-')) {
            return ProgramVerdict::one(
                Other,
                High,
                format!("`{p}` reads code from its input: whatever is piped in runs"),
            );
        }
        return ProgramVerdict::one(
            Other,
            Medium,
            format!(
                "runs the script {} with {p} (project code)",
                lits.iter().find(|a| !a.starts_with('-')).unwrap_or(&"?")
            ),
        );
    }
    if matches!(p, "awk" | "gawk" | "mawk" | "nawk") {
        return match awk::finding(p, &lits, args) {
            Some((risk, why)) => ProgramVerdict::one(Other, risk, why),
            None => ProgramVerdict::low(Reads),
        };
    }
    if p == "make" {
        return make::make(&lits, args);
    }
    if p == "env" && lits.is_empty() {
        return ProgramVerdict::one(
            Reads,
            Medium,
            "prints environment variables, which may hold secrets".into(),
        );
    }
    if p == "command" && matches!(lits.first(), Some(&"-v" | &"-V")) {
        return ProgramVerdict::low(Other);
    }
    if let Some((_, why)) = WRAPPERS.iter().find(|(w, _)| *w == p) {
        return ProgramVerdict::one(
            Other,
            High,
            format!("`{p}` {why}; Reins only judges what it can see"),
        );
    }
    if NETWORK.contains(&p) {
        return ProgramVerdict::one(
            Other,
            High,
            format!("`{p}` talks to the network: it can send your files or data anywhere, or fetch code"),
        );
    }
    if DESTRUCTIVE.contains(&p) || p.starts_with("mkfs") {
        return ProgramVerdict::one(
            Writes,
            High,
            format!("`{p}` destroys data or changes the system"),
        );
    }
    match p {
        "rm" => {
            let recursive = lits.iter().any(|a| {
                *a == "--recursive"
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains(['r', 'R']))
            });
            return if recursive {
                ProgramVerdict::one(
                    Writes,
                    High,
                    "deletes recursively (`rm -r`): whole trees, no undo outside Reins".into(),
                )
            } else {
                ProgramVerdict::one(Writes, Medium, "deletes files".into())
            };
        }
        "chmod" | "chown" | "chgrp" => {
            return if has(&["-R", "--recursive"]) {
                ProgramVerdict::one(
                    Writes,
                    High,
                    format!("`{p} -R` changes ownership or permissions of whole trees"),
                )
            } else if p == "chmod"
                && lits.iter().any(|a| {
                    a.contains('x')
                        || a.chars().any(|c| {
                            c.is_ascii_digit() && c != '0' && c != '4' && c != '6' && c != '2'
                        })
                })
            {
                ProgramVerdict::one(Writes, Medium, "makes files executable".into())
            } else {
                ProgramVerdict::one(
                    Writes,
                    Medium,
                    format!(
                        "changes file {}",
                        if p == "chmod" {
                            "permissions"
                        } else {
                            "ownership"
                        }
                    ),
                )
            };
        }
        "find" => {
            if has(&["-exec", "-execdir", "-ok", "-okdir"]) {
                return ProgramVerdict::one(
                    Reads,
                    High,
                    "`find -exec` runs a program for every match".into(),
                );
            }
            if has(&["-delete"]) {
                return ProgramVerdict::one(
                    Writes,
                    High,
                    "`find -delete` deletes every match".into(),
                );
            }
            if let Some(opt) = lits
                .iter()
                .find(|a| matches!(**a, "-fprint" | "-fprint0" | "-fprintf" | "-fls"))
            {
                return ProgramVerdict::one(
                    Writes,
                    High,
                    format!("`find {opt}` writes its results to a file the option names"),
                );
            }
            return ProgramVerdict::low(Reads);
        }
        "sed" | "gsed" => {
            let in_place = lits.iter().any(|a| {
                a.starts_with("-i")
                    || a.starts_with("--in-place")
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('i'))
            });
            let powers: Vec<sed::Power> = match sed::scripts(&lits) {
                Ok(scripts) => scripts.into_iter().map(sed::power).collect(),
                Err(why) => vec![sed::Power::Unknown(why)],
            };
            for power in &powers {
                match power {
                    sed::Power::Runs(why) => return ProgramVerdict::one(Other, High, why.clone()),
                    sed::Power::Unknown(what) => {
                        return ProgramVerdict::one(
                            Other,
                            High,
                            format!("a sed script Reins cannot follow ({what}): it may run commands or write files"),
                        )
                    }
                    _ => {}
                }
            }
            if let Some(sed::Power::Writes(why)) =
                powers.iter().find(|p| matches!(p, sed::Power::Writes(_)))
            {
                return ProgramVerdict::one(
                    Writes,
                    High,
                    format!("{why}, wherever the script names: Reins does not judge paths inside scripts"),
                );
            }
            return if in_place {
                ProgramVerdict::one(Writes, Medium, "edits files in place (`sed -i`)".into())
            } else {
                ProgramVerdict::low(Reads)
            };
        }
        _ if runs_through_option(p, &lits).is_some() => {
            let opt = runs_through_option(p, &lits).unwrap_or_default();
            return ProgramVerdict::one(
                Other,
                High,
                format!("`{p} {opt}` runs a program named in its options"),
            );
        }
        "hostname" if lits.iter().any(|a| !a.starts_with('-') || matches!(*a, "-F" | "--file")) => {
            return ProgramVerdict::one(Other, High, "changes the machine's name".into());
        }
        "date" if lits.iter().any(|a| *a == "-s" || a.starts_with("--set")) => {
            return ProgramVerdict::one(Other, High, "sets the system clock".into());
        }
        _ if extracts(p, &lits) => {
            return ProgramVerdict::one(
                Writes,
                High,
                format!("`{p}` writes wherever the archive or patch says (a .git/hooks file, say): Reins cannot see those paths before it runs"),
            );
        }
        "sort"
            if lits
                .iter()
                .any(|a| a.starts_with("-o") || a.starts_with("--output")) =>
        {
            return ProgramVerdict::one(
                Writes,
                Medium,
                "writes its output to a file (`-o`)".into(),
            );
        }
        "uniq" | "xxd" if lits.iter().filter(|a| !a.starts_with('-')).count() >= 2 => {
            return ProgramVerdict::one(
                Writes,
                Medium,
                "writes its output to the second file named".into(),
            );
        }
        "printenv" => {
            return ProgramVerdict::one(
                Reads,
                Medium,
                "prints environment variables, which may hold secrets".into(),
            );
        }
        "base64" | "base32" | "xxd"
            if is_decoder(p, &lits.iter().map(|s| s.to_string()).collect::<Vec<_>>()) =>
        {
            return ProgramVerdict::one(
                Reads,
                Medium,
                "decodes data: what it produces is not visible in the command".into(),
            );
        }
        "git" => return git::git(&lits, args),
        _ => {}
    }
    if let Some(v) = packages::verdict(p, &lits) {
        return v;
    }
    if let Some((_, why)) = WRITERS.iter().find(|(w, _)| *w == p) {
        return ProgramVerdict::one(Writes, Medium, (*why).into());
    }
    if BUILDERS.contains(&p) {
        let writes = has(&["--write", "-w", "--fix", "-i"]);
        return ProgramVerdict::one(
            if writes { Writes } else { Other },
            Medium,
            format!("`{p}` builds, checks or runs project code"),
        );
    }
    if READERS.contains(&p) {
        return ProgramVerdict::low(Reads);
    }
    ProgramVerdict::one(
        Other,
        High,
        format!("`{p}` is not a program Reins knows, so it cannot say what it does"),
    )
}
