//! make: the recipes in the workspace's Makefile are project code, as a build is. What reaches
//! beyond them is high: code given on the command line (`--eval`, `-E`), a shell of the caller's
//! choosing (`SHELL=`, `.SHELLFLAGS=`, `MAKESHELL=`), and a makefile from input or from outside the
//! workspace.

use super::{Class, ProgramVerdict};
use crate::policy::Risk;

pub(super) fn make(lits: &[&str], args: &[Option<String>]) -> ProgramVerdict {
    let high = |why: String| ProgramVerdict::one(Class::Other, Risk::High, why);
    let mut i = 0;
    while i < lits.len() {
        let a = lits[i];
        if args.get(i).is_some_and(Option::is_none) {
            return high("`make` is given an argument only known at run time".into());
        }
        if a == "--eval" || a.starts_with("--eval=") || a == "-E" || (a.starts_with("-E") && !a.starts_with("--")) {
            return high(format!("`make {a}` evaluates makefile code given on the command line: its recipes run"));
        }
        let var = a.split_once('=').map(|(k, _)| k.trim_end_matches([':', '+', '?', '!']));
        if let Some(var) = var.filter(|v| !v.starts_with('-')) {
            if matches!(var, "SHELL" | ".SHELLFLAGS" | "MAKESHELL" | "MAKEFLAGS" | "MAKEFILES") {
                return high(format!("`make {a}` changes the shell or the makefiles every recipe runs with"));
            }
        }
        let file = match a {
            "-f" | "--file" | "--makefile" => {
                i += 1;
                lits.get(i).copied()
            }
            _ if a.starts_with("--file=") || a.starts_with("--makefile=") => a.split_once('=').map(|(_, v)| v),
            _ if a.starts_with("-f") && a.len() > 2 && !a.starts_with("--") => Some(&a[2..]),
            _ => None,
        };
        if let Some(f) = file {
            let outside = f == "-" || f.starts_with('/') || f.starts_with('~') || f.split('/').any(|c| c == "..");
            if outside || args.get(i).is_some_and(Option::is_none) {
                return high(format!("`make` runs the recipes of {f}, a makefile from input or outside the workspace"));
            }
        }
        i += 1;
    }
    // `-n` is no dry run for a makefile: `$(shell …)` runs while it is read, and so do `+` lines.
    if !lits.is_empty() && lits.iter().all(|a| matches!(*a, "--version" | "-v" | "--help" | "-h")) {
        return ProgramVerdict::low(Class::Other);
    }
    ProgramVerdict::one(
        Class::Other,
        Risk::Medium,
        "`make` runs the recipes in the workspace's Makefile (project code, like a build)".into(),
    )
}
