//! What programs do through their options and operands, beyond what their name says: run another
//! program (`tar -I`), write where an option points (`-o FILE`), take code as an operand (a sed
//! script), or write wherever an archive says.

/// Programs whose operands (not only their options) can run programs or write files: a sed script
/// (`e`, `w`), tar's bundled first word (`cf`, `xf`), an ed or m4 script. With the reason.
pub fn operands_are_code(program: &str) -> Option<&'static str> {
    match program {
        "sed" | "gsed" => Some("a sed script can run commands (`e`) and write files (`w`)"),
        "tar" | "gtar" | "bsdtar" => {
            Some("tar's first word bundles options, extraction and output among them")
        }
        "ed" | "red" | "ex" => Some("an ed script can run commands (`!`) and write files"),
        "m4" => Some("m4 macros can run commands (`syscmd`)"),
        "dc" => Some("dc can run commands (`!`)"),
        _ => None,
    }
}

/// Whether the command unpacks an archive or applies a patch: the member names, not the command,
/// decide what is written.
pub(super) fn extracts(program: &str, lits: &[&str]) -> bool {
    match program {
        "tar" | "gtar" | "bsdtar" => lits.iter().enumerate().any(|(i, a)| {
            matches!(*a, "--extract" | "--get" | "--update" | "--append")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('x'))
                || (i == 0 && !a.starts_with('-') && a.contains('x'))
        }),
        "unzip" => !lits.iter().any(|a| matches!(*a, "-l" | "-v" | "-t" | "-Z" | "-p")),
        "patch" => true,
        "cpio" => lits.iter().any(|a| {
            *a == "--extract" || (a.starts_with('-') && !a.starts_with("--") && a.contains('i'))
        }),
        "7z" | "7za" | "unrar" => lits.first().is_some_and(|a| *a == "x" || *a == "e"),
        _ => false,
    }
}

/// The options through which `program` writes to the path in its value (`-o FILE`, `-t DIR`,
/// `-C DIR`), attached or not. Long output options are writes for every program.
pub fn writes_through(program: &str, option: &str) -> bool {
    let long = option.split_once('=').map_or(option, |(k, _)| k);
    if matches!(
        long,
        "--output"
            | "--output-file"
            | "--output-dir"
            | "--output-directory"
            | "--outdir"
            | "--out-dir"
            | "--out"
            | "--target-dir"
            | "--target-directory"
            | "--artifact-dir"
            | "--log-file"
            | "--directory"
    ) {
        return true;
    }
    let short: &[&str] = match program {
        "cp" | "mv" | "install" | "ln" => &["-t"],
        "tar" | "gtar" | "bsdtar" => &["-C", "-f"],
        "sort" | "shuf" | "iconv" | "tree" | "gcc" | "cc" | "g++" | "c++" | "clang" | "clang++"
        | "rustc" | "ld" | "as" | "objcopy" | "pandoc" | "zstd" => &["-o"],
        "unzip" => &["-d"],
        "git" => &["-o"],
        _ => &[],
    };
    short.iter().any(|s| option.starts_with(s))
}

/// An option through which an otherwise ordinary program runs another program. Long options
/// match the way getopt matches them, by any prefix (`--use-compress-prog=`, `--to-com=`); short
/// ones attached to their value (`-Itouch`) or inside a cluster (`-avze`).
pub(super) fn runs_through_option(program: &str, lits: &[&str]) -> Option<String> {
    let options: &[&str] = match program {
        "tar" | "gtar" => &[
            "--to-command",
            "--checkpoint-action",
            "--use-compress-program",
            "-I",
            "--info-script",
            "--new-volume-script",
            "-F",
            "--rsh-command",
            "--rmt-command",
        ],
        "zip" => &["-TT", "--unzip-command"],
        "sort" => &["--compress-program"],
        "rsync" => &["-e", "--rsh", "--rsync-path"],
        "git" => &["--upload-pack", "--receive-pack", "--exec"],
        "split" => &["--filter"],
        "install" => &["--strip-program"],
        "less" | "more" => &["--lesskey-src"],
        _ => return None,
    };
    lits.iter()
        .take_while(|a| **a != "--")
        .find(|a| options.iter().any(|o| option_matches(a, o)))
        .map(|a| (*a).to_owned())
}

/// Whether the word `a` gives option `o`: a long option by a prefix of at least three letters
/// (with or without `=value`), a short one exactly, attached, or in a cluster of letters.
fn option_matches(a: &str, o: &str) -> bool {
    if let Some(long) = o.strip_prefix("--") {
        let Some(given) = a.strip_prefix("--") else {
            return false;
        };
        let key = given.split_once('=').map_or(given, |(k, _)| k);
        return key.len() >= 3 && long.starts_with(key);
    }
    if a.starts_with("--") || !a.starts_with('-') {
        return false;
    }
    if o.len() > 2 {
        return a == o || a.starts_with(&format!("{o}="));
    }
    let letter = &o[1..];
    let cluster = &a[1..];
    cluster.starts_with(letter)
        || (cluster.chars().all(|c| c.is_ascii_alphabetic()) && cluster.contains(letter))
}
