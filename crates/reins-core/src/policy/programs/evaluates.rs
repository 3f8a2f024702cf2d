//! Where an ordinary-looking command runs code. Bash evaluates some builtins' arguments: an array
//! subscript in a variable name is arithmetic, and arithmetic on `a[$(cmd)]` runs `cmd`; integer and
//! nameref attributes make later assignments arithmetic; `set -m` puts jobs in process groups of
//! their own, out of the step's reach. And some readers take an option that names a program to run.

use crate::policy::Risk;

use super::exec_capable_variable;

/// A finding for `program` with these arguments (`lits`: each literal, "" where it is not), or None
/// when nothing here applies.
pub(super) fn finding(
    program: &str,
    args: &[Option<String>],
    lits: &[&str],
) -> Option<(Risk, String)> {
    // A name only known at run time could be any variable, subscripts included.
    let named_at_run_time = match program {
        "unset" | "read" | "mapfile" | "readarray" => args.iter().any(Option::is_none),
        "printf" => args
            .iter()
            .position(|a| a.as_deref() == Some("-v"))
            .is_some_and(|v| args.get(v + 1).is_some_and(Option::is_none)),
        _ => false,
    };
    if named_at_run_time {
        return Some((
            Risk::High,
            format!("`{program}` is given a variable name only known at run time: it could set or evaluate any variable"),
        ));
    }
    builtin(program, lits).or_else(|| reader_option(program, lits))
}

/// Whether a name bash reads as a variable holds a subscript (`a[…]`): bash evaluates it.
fn subscripted(name: &str) -> bool {
    name.contains('[')
}

fn subscript_reason(program: &str) -> (Risk, String) {
    (
        Risk::High,
        format!(
            "`{program}` is given an array element as a name: bash evaluates the subscript as arithmetic, and a `$(…)` inside it runs"
        ),
    )
}

/// Whether text a variable receives holds shell code bash may run later (arithmetic, `@P`, `PS4`).
pub fn holds_code(value: &str) -> bool {
    value.contains("$(") || value.contains('`') || value.contains("${")
}

fn builtin(program: &str, lits: &[&str]) -> Option<(Risk, String)> {
    match program {
        "let" => lits.iter().any(|a| !a.is_empty()).then(|| {
            (
                Risk::High,
                "`let` evaluates arithmetic: a variable's value or an array subscript in it runs as code"
                    .into(),
            )
        }),
        "declare" | "typeset" | "local" | "readonly" | "export" => declaration(program, lits),
        "printf" => {
            let at = lits.iter().position(|a| *a == "-v" || a.starts_with("-v"))?;
            let name = if lits[at] == "-v" {
                lits.get(at + 1).copied().unwrap_or("")
            } else {
                &lits[at][2..]
            };
            if subscripted(name) {
                return Some(subscript_reason("printf -v"));
            }
            exec_capable_variable(name)
                .map(|why| (Risk::High, format!("`printf -v` sets {name}, which {why}")))
        }
        "read" | "mapfile" | "readarray" | "getopts" | "unset" | "wait" => lits
            .iter()
            .any(|a| subscripted(a))
            .then(|| subscript_reason(program)),
        "test" | "[" => {
            let v = lits.iter().position(|a| *a == "-v")?;
            lits.get(v + 1)
                .is_some_and(|n| subscripted(n))
                .then(|| subscript_reason("test -v"))
        }
        "set" => lits
            .iter()
            .enumerate()
            .any(|(i, a)| {
                let cluster = a.len() > 1
                    && (a.starts_with('-') || a.starts_with('+'))
                    && !a.starts_with("--")
                    && a[1..].chars().all(|c| c.is_ascii_alphabetic());
                (cluster && a.contains('m'))
                    || (matches!(*a, "-o" | "+o") && lits.get(i + 1) == Some(&"monitor"))
            })
            .then(|| {
                (
                    Risk::High,
                    "`set -m` turns on job control: background jobs get process groups of their own and outlive the step"
                        .into(),
                )
            }),
        _ => None,
    }
}

/// `declare` and its kin: attributes that make assignments arithmetic or indirect, subscripts,
/// exec-capable variables, and stored code.
fn declaration(program: &str, lits: &[&str]) -> Option<(Risk, String)> {
    let mut operands = false;
    for a in lits {
        if !operands && (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            if *a == "--" {
                operands = true;
                continue;
            }
            if a[1..].contains(['i', 'n']) {
                return Some((
                    Risk::High,
                    format!("`{program} {a}` makes the variable an integer or a reference: what is assigned to it is evaluated as arithmetic, which can run code"),
                ));
            }
            continue;
        }
        operands = true;
        let (name, value) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (*a, None),
        };
        if subscripted(name) || value.is_some_and(|v| v.starts_with('(') && v.contains('[')) {
            return Some(subscript_reason(program));
        }
        if let Some(why) = exec_capable_variable(name.trim_end_matches('+')) {
            return Some((Risk::High, format!("`{program}` sets {name}, which {why}")));
        }
        if value.is_some_and(holds_code) {
            return Some((
                Risk::High,
                format!("`{program}` stores text holding `$(…)` in {name}: bash runs it if the value is ever evaluated as arithmetic or a prompt"),
            ));
        }
    }
    None
}

/// Readers with an option that runs a program: `rg --pre`, `fd -x`, `bat --pager`.
fn reader_option(program: &str, lits: &[&str]) -> Option<(Risk, String)> {
    let options: &[&str] = match program {
        "rg" => &["--pre"],
        "fd" | "fdfind" => &["-x", "-X", "--exec", "--exec-batch"],
        "bat" => &["--pager"],
        "ag" => &["--pager"],
        "less" | "more" => &["--lesskey-src"],
        _ => return None,
    };
    lits.iter()
        .find(|a| {
            options.iter().any(|o| {
                *a == o
                    || a.starts_with(&format!("{o}="))
                    || (o.len() == 2 && a.starts_with(o) && !a.starts_with("--"))
            })
        })
        .map(|a| {
            (
                Risk::High,
                format!("`{program} {a}` runs a program named in its options"),
            )
        })
}
