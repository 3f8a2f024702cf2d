//! What Reins knows about programs: which only read, which write the paths they are given, which run
//! other code, which talk to the network, which destroy. A program not listed here is not understood,
//! and so is high risk.

use super::Risk;

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

const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "ash",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "pwsh",
    "powershell",
    "elvish",
    "nu",
    "xonsh",
];

/// Interpreters and the flags that give them code inline.
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("deno", &["eval"]),
    ("bun", &["-e", "--eval", "-p", "--print"]),
    ("ruby", &["-e"]),
    ("irb", &[]),
    ("perl", &["-e", "-E"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("luajit", &["-e"]),
    ("rscript", &["-e"]),
    ("julia", &["-e"]),
    ("osascript", &["-e"]),
    ("tclsh", &[]),
    ("wish", &[]),
    ("expect", &["-c"]),
    ("pypy", &["-c"]),
    ("pypy3", &["-c"]),
];

const WRAPPERS: &[(&str, &str)] = &[
    (
        "env",
        "runs the program named in its arguments, with changed environment",
    ),
    ("sudo", "runs a program as another user (usually root)"),
    ("doas", "runs a program as another user (usually root)"),
    ("su", "runs a shell as another user"),
    ("runuser", "runs a program as another user"),
    ("nohup", "runs a program that outlives the run"),
    (
        "setsid",
        "runs a program in a new session, outside the run's control",
    ),
    ("timeout", "runs the program named in its arguments"),
    ("nice", "runs the program named in its arguments"),
    ("ionice", "runs the program named in its arguments"),
    ("stdbuf", "runs the program named in its arguments"),
    ("taskset", "runs the program named in its arguments"),
    ("chrt", "runs the program named in its arguments"),
    ("time", "runs the program named in its arguments"),
    ("watch", "runs a command again and again"),
    ("xargs", "runs a program with arguments read from its input"),
    ("parallel", "runs programs built from its input"),
    (
        "command",
        "runs the program named in its arguments, bypassing functions",
    ),
    ("builtin", "runs a shell builtin named in its arguments"),
    (
        "exec",
        "replaces the shell with the program named in its arguments",
    ),
    ("eval", "runs a string as shell code"),
    ("source", "runs a shell script inside the current shell"),
    (".", "runs a shell script inside the current shell"),
    ("trap", "sets a command to run on a signal"),
    ("alias", "makes a name stand for another command"),
    (
        "strace",
        "runs and traces the program named in its arguments",
    ),
    (
        "ltrace",
        "runs and traces the program named in its arguments",
    ),
    ("gdb", "runs a debugger that can execute anything"),
    ("chroot", "runs a program in another root"),
    ("unshare", "runs a program in new namespaces"),
    ("nsenter", "runs a program in other namespaces"),
    ("flock", "runs the program named in its arguments"),
    ("script", "runs a shell and records it"),
    ("fakeroot", "runs the program named in its arguments"),
    ("firejail", "runs the program named in its arguments"),
    ("systemd-run", "starts a program as a system service"),
    ("at", "schedules a command to run later"),
    ("batch", "schedules a command to run later"),
    ("crontab", "schedules commands to run later"),
    ("vim", "an editor that can run commands"),
    ("vi", "an editor that can run commands"),
    ("nvim", "an editor that can run commands"),
    ("emacs", "an editor that can run commands"),
    ("less", "a pager that can run commands (`!`)"),
    ("more", "a pager that can run commands (`!`)"),
    ("man", "runs a pager that can run commands"),
    (
        "make",
        "runs the recipes in a Makefile, which can be anything",
    ),
];

const NETWORK: &[&str] = &[
    "curl",
    "wget",
    "nc",
    "ncat",
    "netcat",
    "ssh",
    "scp",
    "sftp",
    "rsync",
    "ftp",
    "lftp",
    "telnet",
    "ping",
    "ping6",
    "dig",
    "nslookup",
    "host",
    "drill",
    "socat",
    "aria2c",
    "http",
    "https",
    "xh",
    "traceroute",
    "tracepath",
    "mtr",
    "whois",
    "tftp",
    "ssh-keyscan",
    "mosh",
    "gh",
    "glab",
    "aws",
    "gcloud",
    "az",
    "kubectl",
    "docker",
    "podman",
    "helm",
    "terraform",
    "npx",
    "pnpx",
    "bunx",
    "uvx",
    "pipx",
    "openssl",
    "nmap",
    "sshpass",
    "rclone",
    "s3cmd",
];

const DESTRUCTIVE: &[&str] = &[
    "dd",
    "shred",
    "wipefs",
    "fdisk",
    "sfdisk",
    "parted",
    "mount",
    "umount",
    "kill",
    "pkill",
    "killall",
    "reboot",
    "shutdown",
    "halt",
    "poweroff",
    "systemctl",
    "service",
    "launchctl",
    "iptables",
    "nft",
    "ufw",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "passwd",
    "chpasswd",
    "visudo",
    "truncate",
    "swapoff",
    "swapon",
    "mkswap",
    "losetup",
    "insmod",
    "rmmod",
    "modprobe",
    "sysctl",
];

const READERS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "which",
    "whoami",
    "date",
    "uname",
    "id",
    "file",
    "stat",
    "du",
    "df",
    "cut",
    "tr",
    "diff",
    "cmp",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "test",
    "[",
    "seq",
    "jq",
    "nl",
    "column",
    "comm",
    "join",
    "paste",
    "fold",
    "od",
    "hexdump",
    "strings",
    "tac",
    "rev",
    "sleep",
    "cd",
    "pushd",
    "popd",
    "type",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "whereis",
    "locale",
    "hostname",
    "true",
    "false",
    "echo",
    "printf",
    "expr",
    "nproc",
    "uptime",
    "fd",
    "fdfind",
    "bat",
    "cal",
    "yes",
    "base32",
    "expand",
    "unexpand",
    "fmt",
    "numfmt",
    "shuf",
    "sum",
    "tsort",
    "pr",
    "look",
    "iconv",
    "free",
    "lsof",
    "ps",
    "pgrep",
    "tty",
    "groups",
    "getconf",
    "exit",
    "return",
    "set",
    "shift",
    "unset",
    "read",
    "wait",
    "declare",
    "local",
    "let",
    ":",
];

const WRITERS: &[(&str, &str)] = &[
    ("cp", "copies files"),
    ("mv", "moves files"),
    ("ln", "creates links"),
    ("mkdir", "creates directories"),
    ("touch", "creates or touches files"),
    ("install", "copies files and sets their modes"),
    ("tee", "writes its input to the files named"),
    ("rmdir", "removes directories"),
    ("unlink", "deletes a file"),
    ("patch", "changes files"),
    (
        "tar",
        "creates or extracts archives: member names decide where files land",
    ),
    ("unzip", "extracts an archive"),
    ("zip", "creates archives"),
    ("gzip", "compresses files in place"),
    ("gunzip", "decompresses files in place"),
    ("xz", "compresses files in place"),
    ("bzip2", "compresses files in place"),
    ("zstd", "compresses files"),
    ("mktemp", "creates a temporary file"),
    ("split", "writes files"),
    ("csplit", "writes files"),
];

/// Programs that build, test or run project code: they execute what is in the workspace.
const BUILDERS: &[&str] = &[
    "cmake",
    "ninja",
    "just",
    "task",
    "gradle",
    "gradlew",
    "mvn",
    "ant",
    "meson",
    "bazel",
    "pytest",
    "tox",
    "nox",
    "jest",
    "vitest",
    "mocha",
    "tsc",
    "eslint",
    "prettier",
    "black",
    "ruff",
    "mypy",
    "pyright",
    "rustc",
    "rustfmt",
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "javac",
    "java",
    "dotnet",
    "swift",
    "swiftc",
    "zig",
    "ghc",
    "stack",
    "mix",
    "elixir",
    "erl",
    "rebar3",
    "sbt",
    "scala",
    "kotlin",
    "kotlinc",
    "clippy-driver",
    "shellcheck",
    "hadolint",
];

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

/// Environment variables that make a program load or run other code.
pub fn exec_capable_variable(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    let why = match upper.as_str() {
        "LD_PRELOAD" | "LD_AUDIT" => "makes every program load a library of its choosing",
        "LD_LIBRARY_PATH" => "changes which libraries programs load",
        "PATH" => "changes which program a name runs",
        "BASH_ENV" | "ENV" => "names a script every shell runs first",
        "PROMPT_COMMAND" | "PS4" | "PS1" => "holds shell code that runs",
        "IFS" => "changes how the shell splits words",
        "SHELLOPTS" | "BASHOPTS" => "changes how the shell behaves",
        "GIT_SSH_COMMAND"
        | "GIT_SSH"
        | "GIT_EXTERNAL_DIFF"
        | "GIT_PAGER"
        | "GIT_EDITOR"
        | "GIT_SEQUENCE_EDITOR"
        | "GIT_ASKPASS"
        | "SSH_ASKPASS"
        | "GIT_PROXY_COMMAND"
        | "GIT_EXEC_PATH"
        | "GIT_TEMPLATE_DIR" => "names a program git runs",
        "GIT_CONFIG"
        | "GIT_CONFIG_GLOBAL"
        | "GIT_CONFIG_SYSTEM"
        | "GIT_CONFIG_PARAMETERS"
        | "GIT_CONFIG_COUNT"
        | "GIT_DIR"
        | "GIT_WORK_TREE" => "changes git's config or repository",
        "PAGER" | "EDITOR" | "VISUAL" | "MANPAGER" | "BROWSER" | "LESSOPEN" | "LESSCLOSE" => {
            "names a program that runs"
        }
        "PYTHONPATH" | "PYTHONSTARTUP" | "PYTHONHOME" | "PYTHONINSPECT" => {
            "makes Python load code of its choosing"
        }
        "NODE_OPTIONS" | "NODE_PATH" => "makes Node load code of its choosing",
        "PERL5OPT" | "PERL5LIB" | "PERLLIB" => "makes Perl load code of its choosing",
        "RUBYOPT" | "RUBYLIB" => "makes Ruby load code of its choosing",
        "RUSTC_WRAPPER"
        | "RUSTC"
        | "CARGO_BUILD_RUSTC_WRAPPER"
        | "CC"
        | "CXX"
        | "LD"
        | "AR"
        | "MAKEFLAGS"
        | "CARGO_TARGET_DIR" => "names a program the build runs",
        "JAVA_TOOL_OPTIONS" | "_JAVA_OPTIONS" | "JDK_JAVA_OPTIONS" => "makes Java load agents",
        "HOME" | "XDG_CONFIG_HOME" => "changes where programs read their config",
        _ if upper.starts_with("LD_") || upper.starts_with("DYLD_") => {
            "changes how programs are loaded"
        }
        _ if upper.starts_with("BASH_FUNC_") => "defines a shell function",
        _ => return None,
    };
    Some(why)
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
        let inline = lits.iter().any(|a| {
            flags.contains(a)
                || flags
                    .iter()
                    .any(|f| f.len() == 2 && a.starts_with(f) && !a.starts_with("--"))
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
        return ProgramVerdict::one(
            Other,
            High,
            format!("`{p}` programs can run commands (system(), pipes) and write files"),
        );
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
            if has(&["-fprint", "-fprint0", "-fprintf", "-fls"]) {
                return ProgramVerdict::one(Writes, Medium, "writes its results to a file".into());
            }
            return ProgramVerdict::low(Reads);
        }
        "sed" => {
            let in_place = lits.iter().any(|a| {
                a.starts_with("-i")
                    || a.starts_with("--in-place")
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('i'))
            });
            return if in_place {
                ProgramVerdict::one(Writes, Medium, "edits files in place (`sed -i`)".into())
            } else {
                ProgramVerdict::one(
                    Reads,
                    Medium,
                    "sed scripts can write files (`w`) and GNU sed can run commands (`e`)".into(),
                )
            };
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
        "uniq" if lits.iter().filter(|a| !a.starts_with('-')).count() >= 2 => {
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
        "git" => return git(&lits, args),
        "cargo" => {
            return subcommand(
                p,
                &lits,
                &[
                    "build",
                    "check",
                    "test",
                    "run",
                    "clippy",
                    "fmt",
                    "doc",
                    "bench",
                    "tree",
                    "metadata",
                    "clean",
                    "new",
                    "init",
                    "nextest",
                    "version",
                    "--version",
                    "-V",
                ],
                &[
                    "help",
                    "--help",
                    "-h",
                    "locate-project",
                    "verify-project",
                    "pkgid",
                    "read-manifest",
                ],
                &[
                    "install",
                    "publish",
                    "login",
                    "logout",
                    "owner",
                    "yank",
                    "add",
                    "remove",
                    "update",
                    "fetch",
                    "search",
                    "generate-lockfile",
                    "vendor",
                ],
                "compiles and runs project code (build scripts, tests)",
            )
        }
        "npm" | "pnpm" | "yarn" => {
            return subcommand(
                p,
                &lits,
                &[
                    "test",
                    "t",
                    "run",
                    "run-script",
                    "start",
                    "build",
                    "exec-no",
                ],
                &[
                    "ls",
                    "list",
                    "outdated",
                    "view",
                    "help",
                    "--version",
                    "-v",
                    "why",
                    "explain",
                ],
                &[
                    "install",
                    "i",
                    "ci",
                    "add",
                    "remove",
                    "uninstall",
                    "rm",
                    "update",
                    "up",
                    "upgrade",
                    "exec",
                    "x",
                    "dlx",
                    "publish",
                    "login",
                    "init",
                    "create",
                    "link",
                    "audit",
                    "pack",
                    "rebuild",
                ],
                "runs the project's package scripts",
            )
        }
        "go" => {
            return subcommand(
                p,
                &lits,
                &["build", "test", "vet", "fmt", "run", "generate", "clean"],
                &["list", "doc", "version", "env", "help"],
                &["get", "install", "mod", "work"],
                "compiles and runs project code",
            )
        }
        "pip" | "pip3" | "uv" | "poetry" | "pipenv" | "conda" | "gem" | "bundle" | "composer"
        | "brew" | "apt" | "apt-get" | "dnf" | "yum" | "pacman" | "apk" | "snap" | "flatpak" => {
            return subcommand(
                p,
                &lits,
                &["run", "exec", "check", "lock"],
                &[
                    "list",
                    "show",
                    "freeze",
                    "info",
                    "search",
                    "help",
                    "--version",
                    "outdated",
                    "tree",
                ],
                &[],
                "runs project code",
            );
        }
        _ => {}
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

/// Tools with subcommands: known local ones are medium, read-only ones low, network ones high,
/// anything else high.
fn subcommand(
    p: &str,
    lits: &[&str],
    local: &[&str],
    reads: &[&str],
    network: &[&str],
    local_why: &str,
) -> ProgramVerdict {
    let sub = lits
        .iter()
        .find(|a| !a.starts_with('-') || reads.contains(a) || local.contains(a))
        .copied()
        .unwrap_or("");
    if sub.is_empty() && matches!(p, "yarn") {
        return ProgramVerdict::one(
            Class::Other,
            Risk::High,
            "`yarn` installs packages from the network and runs their scripts".into(),
        );
    }
    if reads.contains(&sub) {
        return ProgramVerdict::low(Class::Reads);
    }
    if local.contains(&sub) {
        return ProgramVerdict::one(
            Class::Other,
            Risk::Medium,
            format!("`{p} {sub}` {local_why}"),
        );
    }
    if network.contains(&sub) || network.is_empty() {
        return ProgramVerdict::one(
            Class::Other,
            Risk::High,
            format!("`{p} {sub}` downloads, installs or publishes packages over the network (install scripts run code)"),
        );
    }
    ProgramVerdict::one(
        Class::Other,
        Risk::High,
        format!("`{p} {sub}` is not a subcommand Reins knows, so it cannot say what it does"),
    )
}

fn git(lits: &[&str], args: &[Option<String>]) -> ProgramVerdict {
    use Risk::*;
    let mut i = 0;
    let mut reasons = Vec::new();
    // Global options before the subcommand.
    while let Some(a) = lits.get(i) {
        match *a {
            "-c" | "--config-env" => {
                return ProgramVerdict::one(
                    Class::Other,
                    High,
                    "`git -c` sets config for this command, and config can name programs git runs"
                        .into(),
                );
            }
            "-C" => {
                reasons.push((
                    Medium,
                    format!("runs git in {}", lits.get(i + 1).unwrap_or(&"?")),
                ));
                i += 2;
            }
            a if a.starts_with("--git-dir")
                || a.starts_with("--work-tree")
                || a.starts_with("--exec-path")
                || a.starts_with("--namespace") =>
            {
                return ProgramVerdict::one(
                    Class::Other,
                    High,
                    format!("`git {a}` points git at other repositories or programs"),
                );
            }
            a if a.starts_with('-') => i += 1,
            _ => break,
        }
        if args.get(i.saturating_sub(1)).is_some_and(Option::is_none) {
            return ProgramVerdict::one(
                Class::Other,
                High,
                "a git option is only known at run time".into(),
            );
        }
    }
    let sub = lits.get(i).copied().unwrap_or("");
    let rest = &lits[(i + 1).min(lits.len())..];
    let has = |flags: &[&str]| rest.iter().any(|a| flags.contains(a));
    let verdict: (Risk, String) = match sub {
        "" | "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree"
        | "blame" | "grep" | "describe" | "shortlog" | "cat-file" | "help" | "version"
        | "--version" | "whatchanged" | "name-rev" | "for-each-ref" | "count-objects"
        | "rev-list" | "merge-base" | "show-ref" | "var" | "check-ignore" => (Low, String::new()),
        "branch" | "tag" if has(&["-D", "--delete", "-d", "--force", "-f", "-M"]) => (
            High,
            format!("`git {sub}` with delete or force flags discards refs"),
        ),
        "branch" | "tag" if rest.iter().all(|a| a.starts_with('-')) => (Low, String::new()),
        "push"
            if has(&[
                "--force",
                "-f",
                "--force-with-lease",
                "--mirror",
                "--delete",
                "-d",
                "--prune",
            ]) || rest
                .iter()
                .any(|a| a.starts_with('+') || a.starts_with("--force")) =>
        {
            (
                High,
                "`git push --force` rewrites history on the remote, for everyone".into(),
            )
        }
        "push" | "fetch" | "pull" | "clone" | "ls-remote" | "remote" | "submodule" | "archive"
        | "send-email" | "request-pull" | "lfs" => (
            High,
            format!("`git {sub}` talks to the network: it can send or fetch code"),
        ),
        "reset" if has(&["--hard", "--merge", "--keep"]) => {
            (High, "`git reset --hard` discards uncommitted work".into())
        }
        "clean" => (High, "`git clean` deletes untracked files".into()),
        "checkout" | "restore" if has(&["--", ".", "-f", "--force", "--worktree", "-W"]) => (
            High,
            format!("`git {sub}` with these arguments discards uncommitted changes"),
        ),
        "stash" if has(&["drop", "clear"]) => {
            (High, "`git stash drop/clear` discards saved work".into())
        }
        "config" => (
            High,
            "`git config` can name programs git runs (core.pager, core.hooksPath, aliases)".into(),
        ),
        "filter-branch" | "filter-repo" | "replace" | "update-ref" | "gc" | "prune" | "reflog"
            if sub != "reflog" || has(&["expire", "delete"]) =>
        {
            (High, format!("`git {sub}` rewrites or drops history"))
        }
        "reflog" => (Low, String::new()),
        "add" | "commit" | "checkout" | "switch" | "restore" | "stash" | "merge" | "rebase"
        | "cherry-pick" | "revert" | "mv" | "rm" | "init" | "tag" | "branch" | "notes"
        | "apply" | "am" | "format-patch" | "worktree" | "bisect" | "reset" | "commit-tree"
        | "sparse-checkout" => (
            Medium,
            format!(
                "`git {sub}` changes the repository or the working tree (commit hooks may run)"
            ),
        ),
        other => (
            High,
            format!("`git {other}` is not a git command Reins knows"),
        ),
    };
    if verdict.0 != Low || !verdict.1.is_empty() {
        reasons.push(verdict);
    }
    ProgramVerdict {
        class: Class::Other,
        reasons,
    }
}
