//! Every program the classifier knows, with what it can do beyond its everyday use (the functions
//! GTFOBins lists: a shell or command, file reads and writes, uploads and downloads, code) and how
//! the classifier treats each. A program without an entry here is not known, and so is high: the
//! table is the list of known programs, so none can be known without its capabilities written
//! down. A reviewer checks a row against the program's manual; the corpora in `policy::corpus`
//! check the classifier against the rows.

/// One thing a program can do beyond its everyday use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Power {
    /// Starts a shell or runs another program.
    Command,
    /// Interprets code given to it.
    Code,
    /// Reads files it is pointed at.
    ReadFiles,
    /// Writes, deletes or changes files.
    WriteFiles,
    /// Sends data over the network.
    Upload,
    /// Fetches data or code over the network.
    Download,
    /// Acts as another user or changes the system.
    Privilege,
    /// Shows the environment, which may hold secrets.
    Secrets,
}

use Power::*;

impl Power {
    pub fn as_str(self) -> &'static str {
        match self {
            Command => "runs commands",
            Code => "interprets code",
            ReadFiles => "reads files",
            WriteFiles => "writes files",
            Upload => "uploads",
            Download => "downloads",
            Privilege => "acts as another user or on the system",
            Secrets => "shows secrets",
        }
    }
}

/// Programs that share their powers and their treatment.
pub struct Entry {
    pub programs: &'static [&'static str],
    pub powers: &'static [Power],
    /// How the classifier rates each power.
    pub handling: &'static str,
}

const ALL: &[Power] = &[Command, Code, ReadFiles, WriteFiles, Upload, Download];

pub const TABLE: &[Entry] = &[
    Entry {
        programs: &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
            "busybox", "pwsh", "powershell", "elvish", "nu", "xonsh"],
        powers: ALL,
        handling: "always high: a script, `-c` or its input can be any command",
    },
    Entry {
        programs: &["python", "node", "nodejs", "deno", "bun", "ruby", "irb", "perl", "php",
            "lua", "luajit", "rscript", "julia", "osascript", "tclsh", "wish", "expect", "pypy",
            "pypy3"],
        powers: ALL,
        handling: "inline code (`-c`, `-e`, `-p`, in a cluster too) and code from input: high; \
            `-m pip|ensurepip|http.server|pipx|venv`: high; a script or another module: medium \
            (project code); `--version` and `--help` alone: low",
    },
    Entry {
        programs: &["sudo", "doas", "su", "runuser"],
        powers: &[Command, Privilege],
        handling: "always high: runs as another user",
    },
    Entry {
        programs: &["timeout", "nice", "ionice", "stdbuf", "time", "env", "command"],
        powers: &[Command, Secrets],
        handling: "the wrapped command is classified in its place, with env's assignments judged \
            as prefix assignments; an option Reins does not follow (`env -S`, `env -C`, `time -o`, \
            `ionice -p`) is high; `env` alone prints the environment: medium; `command -v`: low",
    },
    Entry {
        programs: &["xargs"],
        powers: &[Command],
        handling: "the command it runs is classified, and its arguments come from input: a \
            read-only command is medium, any other high; an option Reins does not know is high",
    },
    Entry {
        programs: &["nohup", "setsid", "taskset", "chrt", "watch", "parallel", "builtin",
            "exec", "eval", "source", ".", "trap", "alias", "strace", "ltrace", "gdb", "chroot",
            "unshare", "nsenter", "flock", "script", "fakeroot", "firejail", "systemd-run",
            "at", "batch", "crontab"],
        powers: &[Command],
        handling: "always high: runs code out of the step's sight, control or time",
    },
    Entry {
        programs: &["vim", "vi", "nvim", "emacs", "less", "more", "man"],
        powers: &[Command, ReadFiles, WriteFiles],
        handling: "always high: shell escapes (`:!`, `!`) run commands",
    },
    Entry {
        programs: &["make"],
        powers: &[Command, Code],
        handling: "medium (the recipes are project code, like a build); `--eval`/`-E`, \
            `SHELL=` and its kin, a makefile from input or from outside the workspace: high",
    },
    Entry {
        programs: &["curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "rsync", "ftp",
            "lftp", "telnet", "ping", "ping6", "dig", "nslookup", "host", "drill", "socat",
            "aria2c", "http", "https", "xh", "traceroute", "tracepath", "mtr", "whois", "tftp",
            "ssh-keyscan", "mosh", "sshpass", "rclone", "s3cmd", "nmap", "openssl"],
        powers: &[Command, ReadFiles, WriteFiles, Upload, Download],
        handling: "always high: talks to the network (ssh, socat and rsync `-e` also run commands)",
    },
    Entry {
        programs: &["gh", "glab", "aws", "gcloud", "az", "kubectl", "docker", "podman", "helm",
            "terraform"],
        powers: &[Command, Upload, Download, Privilege],
        handling: "always high: remote services, containers and infrastructure",
    },
    Entry {
        programs: &["npx", "pnpx", "bunx", "uvx", "pipx"],
        powers: &[Download, Code],
        handling: "always high: fetches a package and runs it",
    },
    Entry {
        programs: &["dd", "shred", "wipefs", "fdisk", "sfdisk", "parted", "mount", "umount",
            "kill", "pkill", "killall", "reboot", "shutdown", "halt", "poweroff", "systemctl",
            "service", "launchctl", "iptables", "nft", "ufw", "useradd", "userdel", "usermod",
            "groupadd", "passwd", "chpasswd", "visudo", "truncate", "swapoff", "swapon", "mkswap",
            "losetup", "insmod", "rmmod", "modprobe", "sysctl", "mkfs"],
        powers: &[WriteFiles, Privilege],
        handling: "always high: destroys data or changes the system",
    },
    Entry {
        programs: &["rm"],
        powers: &[WriteFiles],
        handling: "medium, paths judged; `-r`/`-R`/`--recursive`: high; a glob that stays in one \
            folder of the workspace and cannot reach hidden names: medium",
    },
    Entry {
        programs: &["chmod", "chown", "chgrp"],
        powers: &[WriteFiles, Privilege],
        handling: "medium, paths judged; `-R`: high",
    },
    Entry {
        programs: &["find"],
        powers: &[Command, WriteFiles, ReadFiles],
        handling: "low, paths judged; `-exec`, `-execdir`, `-ok`, `-okdir`, `-delete` and \
            `-fprint`/`-fprint0`/`-fprintf`/`-fls`: high",
    },
    Entry {
        programs: &["sed", "gsed"],
        powers: &[Command, WriteFiles],
        handling: "the script is parsed: `e` and `s///e` (run) and `w`, `W`, `s///w` (write): \
            high; a script from a file (`-f`) or one Reins cannot follow: high; `-i`: medium",
    },
    Entry {
        programs: &["awk", "gawk", "mawk", "nawk"],
        powers: &[Command, Code, ReadFiles, WriteFiles],
        handling: "the program is parsed: system(), a pipe (`|`, `|&`), `print >`/`>>` a file, \
            `getline <` a file and gawk's `@`: high; a program from a file (`-f`, `-i`, `-l`, \
            `-E`) or an unknown option: high; reading and printing: low",
    },
    Entry {
        programs: &["rg", "grep", "egrep", "fgrep", "ag", "fd", "fdfind", "bat"],
        powers: &[ReadFiles, Command],
        handling: "low, paths judged; `rg --pre`, `ag --pager`, `fd -x/-X/--exec/--exec-batch` \
            and `bat --pager` run a program: high",
    },
    Entry {
        programs: &["tar", "gtar", "bsdtar"],
        powers: &[Command, WriteFiles, ReadFiles],
        handling: "creating: medium, paths judged; extracting (`x`, `--extract`, …): high; \
            `--to-command`, `--checkpoint-action`, `-I`/`--use-compress-program`, \
            `-F`/`--info-script`, `--new-volume-script`, `--rsh-command`, `--rmt-command`: high",
    },
    Entry {
        programs: &["git"],
        powers: &[Command, Upload, Download, WriteFiles],
        handling: "`-c`, `--config-env`, `--exec-path`, `--git-dir`, `--work-tree`: high; \
            `--upload-pack`, `--receive-pack`, `--exec`, `grep -O`, `rebase -x/--exec`, \
            `bisect run`: high; network subcommands, history rewrites, discards and config \
            writes: high; reading config and remotes: low; local changes: medium (hooks may run)",
    },
    Entry {
        programs: &["cargo", "npm", "pnpm", "yarn", "go"],
        powers: &[Code, Download, Upload],
        handling: "build, test and run: medium (project code); read-only subcommands: low; \
            install, add, publish, fetch and any other: high (network, install scripts)",
    },
    Entry {
        programs: &["pip", "pip3", "uv", "poetry", "pipenv", "conda", "gem", "bundle",
            "composer", "brew", "apt", "apt-get", "dnf", "yum", "pacman", "apk", "snap",
            "flatpak"],
        powers: &[Code, Download, Privilege],
        handling: "listing and showing: low; run and check: medium; anything else (install, \
            download): high",
    },
    Entry {
        programs: &["zip"],
        powers: &[Command, WriteFiles],
        handling: "medium, paths judged; `-TT` and `--unzip-command` run a program: high",
    },
    Entry {
        programs: &["unzip", "patch"],
        powers: &[WriteFiles],
        handling: "writes wherever the archive or patch says: high; `unzip -l/-v/-t/-Z/-p`: low",
    },
    Entry {
        programs: &["cp", "mv", "ln", "mkdir", "touch", "install", "tee", "rmdir", "unlink",
            "gzip", "gunzip", "xz", "bzip2", "zstd", "mktemp", "split", "csplit"],
        powers: &[WriteFiles, Command],
        handling: "medium, every path judged (a protected or outside path is high); `ln`'s \
            target judged from the link's folder; `install --strip-program` and \
            `split --filter` run a program: high",
    },
    Entry {
        programs: &["sort", "uniq", "shuf", "iconv", "tree", "xxd"],
        powers: &[ReadFiles, WriteFiles, Command],
        handling: "low, paths judged; an output file (`-o`, uniq's and xxd's second operand) is \
            a write; `sort --compress-program`: high; `xxd -r`: medium (decodes)",
    },
    Entry {
        programs: &["cmake", "ninja", "just", "task", "gradle", "gradlew", "mvn", "ant", "meson",
            "bazel", "pytest", "tox", "nox", "jest", "vitest", "mocha", "tsc", "eslint",
            "prettier", "black", "ruff", "mypy", "pyright", "rustc", "rustfmt", "gcc", "g++",
            "cc", "c++", "clang", "clang++", "javac", "java", "dotnet", "swift", "swiftc", "zig",
            "ghc", "stack", "mix", "elixir", "erl", "rebar3", "sbt", "scala", "kotlin",
            "kotlinc", "clippy-driver", "shellcheck", "hadolint"],
        powers: &[Code, WriteFiles],
        handling: "medium: builds, checks or runs project code; output options are writes",
    },
    Entry {
        programs: &["ls", "cat", "head", "tail", "wc", "pwd", "which", "whoami", "uname", "id",
            "file", "stat", "du", "df", "cut", "tr", "diff", "cmp", "basename", "dirname",
            "realpath", "readlink", "jq", "yq", "nl", "column", "comm", "join", "paste", "fold",
            "od", "hexdump", "strings", "tac", "rev", "md5sum", "sha1sum", "sha224sum",
            "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "whereis", "locale",
            "nproc", "uptime", "cal", "base32", "base64", "expand", "unexpand", "fmt", "numfmt",
            "sum", "tsort", "pr", "look", "free", "lsof", "ps", "pgrep", "tty", "groups",
            "getconf", "zcat", "bzcat", "xzcat", "zgrep", "nm", "objdump", "readelf", "lscpu",
            "type"],
        powers: &[ReadFiles],
        handling: "low inside the workspace; outside it medium; a credential location (`~/.ssh`, \
            `~/.aws`, keyrings, browser profiles, shell histories, …): high; decoding: medium",
    },
    Entry {
        programs: &["echo", "printf", "true", "false", "expr", "seq", "sleep", "yes", ":"],
        powers: &[Code],
        handling: "low (their arguments are text, not paths); `printf -v` with a subscript, an \
            exec-capable variable or a name only known at run time: high",
    },
    Entry {
        programs: &["cd", "pushd", "popd", "exit", "return", "set", "shift", "unset", "read",
            "wait", "declare", "local", "let", "test", "["],
        powers: &[Code],
        handling: "low; bash evaluates subscripts and integer assignments as arithmetic: \
            `let`, `declare -i/-n`, subscripts, `test -v a[…]`, `set -m` and exec-capable \
            variables are high; `cd` outside the workspace or to a folder only known at run \
            time: high",
    },
    Entry {
        programs: &["printenv"],
        powers: &[Secrets],
        handling: "medium: prints environment variables, which may hold secrets",
    },
    Entry {
        programs: &["hostname", "date"],
        powers: &[Privilege],
        handling: "low; setting the host name or the clock: high",
    },
    Entry {
        programs: &["reins", "reins-app"],
        powers: &[Command, Privilege],
        handling: "always high: an agent must not drive the harness that watches it",
    },
];

/// The entry for a program, if Reins knows it (`python3.11` is `python`).
pub fn entry(program: &str) -> Option<&'static Entry> {
    let name = if program.starts_with("python")
        && program[6..].chars().all(|c| c.is_ascii_digit() || c == '.')
    {
        "python"
    } else if program.starts_with("mkfs") {
        "mkfs"
    } else {
        program
    };
    TABLE.iter().find(|e| e.programs.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::super::lists::{
        BUILDERS, DESTRUCTIVE, INTERPRETERS, NETWORK, READERS, SHELLS, WRAPPERS, WRITERS,
    };
    use super::*;

    /// Every program in the classifier's lists has its row, and every row's program is known.
    #[test]
    fn every_program_the_classifier_knows_has_its_capabilities() {
        let listed = SHELLS
            .iter()
            .chain(INTERPRETERS.iter().map(|(p, _)| p))
            .chain(WRAPPERS.iter().map(|(p, _)| p))
            .chain(NETWORK)
            .chain(DESTRUCTIVE)
            .chain(READERS)
            .chain(WRITERS.iter().map(|(p, _)| p))
            .chain(BUILDERS);
        let missing: Vec<&str> = listed.filter(|p| entry(p).is_none()).copied().collect();
        assert!(missing.is_empty(), "listed without a capabilities row: {missing:?}");
        let mut seen = std::collections::HashSet::new();
        for e in TABLE {
            assert!(!e.powers.is_empty() && !e.handling.is_empty());
            for p in e.programs {
                assert!(seen.insert(*p), "{p} has two rows");
                let v = super::super::classify(p, &[]);
                assert!(
                    !v.reasons.iter().any(|(_, why)| why.contains("not a program Reins knows")),
                    "{p} has a row but the classifier does not know it"
                );
            }
        }
        // Not in the table: not known, whatever the lists say.
        let v = super::super::classify("frobnicate", &[]);
        assert!(v.reasons.iter().any(|(_, why)| why.contains("not a program Reins knows")));
    }
}
