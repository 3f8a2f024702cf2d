//! F6: writes outside the workspace and onto protected paths that were rated below high, each as
//! it was reproduced; and the everyday commands next to them that must stay where they were.

use std::path::Path;

use rstest::rstest;

use super::*;

fn analyse_in(root: &Path, cmd: &str) -> Analysis {
    analyse_command(
        cmd,
        Place {
            root,
            protected: &Protected::NONE,
        },
    )
}

fn analyse(cmd: &str) -> Analysis {
    analyse_in(Path::new("/work/ws"), cmd)
}

#[rstest]
// An attached value of a write option.
#[case::iconv_attached_outside("iconv -f utf-8 -t utf-8 -o/tmp/outside/iconv README", "outside")]
#[case::iconv_attached_git("iconv -f utf-8 -t utf-8 -o.git/config payload", "git config")]
#[case::shuf_attached("shuf -o/tmp/out README", "outside")]
#[case::shuf_env("shuf -e hello -o.env", "environment file")]
#[case::sort_attached("sort -o/tmp/out README", "outside")]
#[case::cp_target_attached("cp -t/tmp README", "outside")]
#[case::mv_target_attached("mv -t/tmp README", "outside")]
#[case::tar_dir_attached("tar -C/tmp -cf x.tar README", "outside")]
// The value of a write option given as the next word.
#[case::iconv_separate("iconv -f utf-8 -t utf-8 -o /tmp/out README", "outside")]
#[case::gcc_output("gcc -o /tmp/gcc-out a.c", "outside")]
#[case::cargo_target_dir("cargo build --target-dir /tmp/tgt", "outside")]
#[case::git_log_output("git log --output=/tmp/out", "outside")]
#[case::git_diff_output("git diff --output=/tmp/out", "outside")]
// Globs that expand to protected names.
#[case::glob_hooks("cp -t .gi?/hooks pre-commit", "hidden")]
#[case::glob_config("cp cfg.txt .gi?/config", "hidden")]
#[case::glob_index("rm .gi?/index", "hidden")]
#[case::glob_env("cp x .e[n]v", "hidden")]
#[case::glob_reins("cp allow.toml .reins*/policy.toml", "hidden")]
#[case::glob_vscode("cp t.json .vs*/tasks.json", "hidden")]
#[case::glob_bracket_dot("cp x [.]git/config", "hidden")]
#[case::glob_brace("cp x {a,.git}/config", "hidden")]
#[case::glob_write("touch *.txt", "expands to")]
#[case::glob_rm_through_folders("rm */x.txt", "expands to")]
// A link made earlier in the same command.
#[case::link_hop("ln -s . d && ln -s d/.. e && cp README e/outside/symlink-hop", "link this command makes")]
#[case::link_then_write("ln -s .git g; cp evil g/hooks/pre-commit", "link this command makes")]
// Archives and patches decide their own paths.
#[case::tar_extract("tar -xf vendor.tar", "archive")]
#[case::tar_extract_absolute("tar -xPf x.tar", "archive")]
#[case::tar_bundled("tar xf vendor.tar", "archive")]
#[case::unzip("unzip vendor.zip", "archive")]
#[case::patch("patch -p1 -i fix.diff", "patch")]
// A write option's value only known at run time.
#[case::attached_variable("iconv -f utf-8 -t utf-8 -o$HOME/.config/reins/policy.toml allow.toml", "run time")]
#[case::separate_variable("sort -o \"$OUT\" README", "run time")]
#[case::long_variable("git log --output=$OUT", "run time")]
// Changing the machine.
#[case::hostname("hostname pwned", "machine's name")]
#[case::date_set("date -s 2020-01-01", "clock")]
// Outside paths given to programs that may write them.
#[case::git_outside("git diff /tmp/a /tmp/b", "outside")]
fn f6_writes_are_high(#[case] cmd: &str, #[case] why: &str) {
    let a = analyse(cmd);
    assert_eq!(a.risk, Risk::High, "{cmd}: {:?}", a.all_reasons());
    assert!(
        a.all_reasons().join(" | ").contains(why),
        "{cmd}: {:?}",
        a.all_reasons()
    );
}

#[rstest]
#[case::list_glob("ls *.rs", Risk::Low)]
// rm unlinks what a glob in the last part names, links included, never their targets.
#[case::rm_glob("rm -f *.tmp", Risk::Medium)]
#[case::cat("cat src/main.rs", Risk::Low)]
#[case::grep("grep -rn foo src", Risk::Low)]
#[case::cut_slash("cut -d/ -f2 paths.txt", Risk::Low)]
#[case::cut_comma("cut -d, -f2 data.csv", Risk::Low)]
#[case::read_outside("cat /etc/hosts", Risk::Medium)]
#[case::sort_inside("sort -o out.txt in.txt", Risk::Medium)]
#[case::tar_list("tar -tf x.tar", Risk::Medium)]
#[case::unzip_list("unzip -l x.zip", Risk::Medium)]
#[case::cp_inside("cp a.txt b.txt", Risk::Medium)]
#[case::gcc_include("gcc -Iinclude -o app main.c", Risk::Medium)]
#[case::hostname_show("hostname -f", Risk::Low)]
#[case::date_show("date +%s", Risk::Low)]
fn everyday_commands_keep_their_rating(#[case] cmd: &str, #[case] risk: Risk) {
    let a = analyse(cmd);
    assert_eq!(a.risk, risk, "{cmd}: {:?}", a.all_reasons());
}

/// F6: `d/..` with an existing `d -> .` is the workspace's parent, not the workspace.
#[test]
fn dot_dot_is_taken_physically() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join("sub"))?;
    std::os::unix::fs::symlink(".", root.join("d"))?;
    std::os::unix::fs::symlink(tmp.path(), root.join("up"))?;
    let root = std::fs::canonicalize(&root)?;
    for cmd in ["cp README d/../x", "echo hi > d/../x", "cp README up/../../x"] {
        let a = analyse_in(&root, cmd);
        assert_eq!(a.risk, Risk::High, "{cmd}: {:?}", a.all_reasons());
    }
    assert_eq!(analyse_in(&root, "cp README sub/../x").risk, Risk::Medium);
    Ok(())
}
