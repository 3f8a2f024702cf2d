//! git: global options first (some point git at other programs), then the subcommand.

use super::{Class, ProgramVerdict};
use crate::policy::Risk;

pub(super) fn git(lits: &[&str], args: &[Option<String>]) -> ProgramVerdict {
    use Risk::*;
    let mut i = 0;
    let mut reasons = Vec::new();
    // Global options before the subcommand.
    while let Some(a) = lits.get(i) {
        match *a {
            a if a == "-c" || a.starts_with("--config-env") => {
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
    if sub == "grep"
        && rest
            .iter()
            .any(|a| long_option(a, "open-files-in-pager") || short_option(a, 'O', "efABCm"))
    {
        return ProgramVerdict::one(
            Class::Other,
            High,
            "`git grep -O` opens the matches in a program named in the option: it runs that program".into(),
        );
    }
    if let Some(out) = rest
        .iter()
        .find(|a| a.starts_with("--output") || long_option(a, "output"))
    {
        return ProgramVerdict::one(
            Class::Writes,
            High,
            format!("`git {sub} {out}` writes its output to a file the option names"),
        );
    }
    let verdict: (Risk, String) = match sub {
        "config" if reads_config(rest) => (Low, String::new()),
        "remote" if rest.iter().all(|a| matches!(*a, "-v" | "--verbose")) || rest.first() == Some(&"get-url") => {
            (Low, String::new())
        }
        "rebase" if rest.iter().any(|a| a.starts_with("--exec") || long_option(a, "exec") || short_option(a, 'x', "sX")) => (
            High,
            "`git rebase --exec` runs a command after each commit it replays".into(),
        ),
        "bisect" if rest.first() == Some(&"run") => (
            High,
            "`git bisect run` runs the command it is given at every step".into(),
        ),
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

/// Whether `git config` only reads: `--get`, `--list` and their kin, or the `get` and `list`
/// subcommands, with nothing that writes or opens an editor.
fn reads_config(rest: &[&str]) -> bool {
    let writes = rest.iter().any(|a| {
        matches!(
            *a,
            "--add" | "--replace-all" | "--unset" | "--unset-all" | "--rename-section"
                | "--remove-section" | "-e" | "--edit" | "set" | "unset" | "edit"
                | "rename-section" | "remove-section"
        )
    });
    let reads = rest.iter().any(|a| {
        a.starts_with("--get") || matches!(*a, "--list" | "-l" | "get" | "list")
    });
    reads && !writes
}

/// Whether `arg` is the long option `--name` as git reads it: its parse-options takes any unique
/// prefix (`--open=` is `--open-files-in-pager=`), so every prefix counts; an ambiguous one only
/// makes git fail.
fn long_option(arg: &str, name: &str) -> bool {
    let Some(given) = arg.strip_prefix("--") else {
        return false;
    };
    let given = given.split_once('=').map_or(given, |(n, _)| n);
    !given.is_empty() && name.starts_with(given)
}

/// Whether `arg` is a bundle of short options holding `-flag` (`-iO` is `-i -O`): read up to the
/// first option that takes a value (`takes`), whose value is the rest of the bundle.
fn short_option(arg: &str, flag: char, takes: &str) -> bool {
    let Some(bundle) = arg.strip_prefix('-').filter(|b| !b.starts_with('-')) else {
        return false;
    };
    for c in bundle.chars() {
        if c == flag {
            return true;
        }
        if takes.contains(c) {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::{long_option, short_option};

    #[test]
    fn a_long_option_is_known_by_any_prefix_and_a_short_one_inside_a_bundle() {
        for a in ["--open-files-in-pager=x", "--open-files=x", "--open=x", "--op", "--o"] {
            assert!(long_option(a, "open-files-in-pager"), "{a}");
        }
        for a in ["--or", "--only-matching", "--", "-O", "--open-files-in-pagerx"] {
            assert!(!long_option(a, "open-files-in-pager"), "{a}");
        }
        assert!(short_option("-iO", 'O', "efABCm"));
        assert!(short_option("-Ovim", 'O', "efABCm"));
        // The O is the pattern `-e` takes, not an option.
        assert!(!short_option("-ieO", 'O', "efABCm"));
        assert!(!short_option("--O", 'O', "efABCm"));
    }
}
