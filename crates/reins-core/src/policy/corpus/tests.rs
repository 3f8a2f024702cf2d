use std::path::Path;

use super::*;
use crate::policy::shell::{analyse_command, Place};
use crate::policy::{Protected, Risk};

static NONE: Protected = Protected::NONE;

fn place() -> Place<'static> {
    Place {
        root: Path::new("/work/ws"),
        protected: &NONE,
    }
}

#[test]
fn no_everyday_command_rates_high() {
    let high: Vec<String> = commands(BENIGN)
        .filter_map(|c| {
            let a = analyse_command(c, place());
            (a.risk == Risk::High).then(|| format!("{c}\n    {}", a.all_reasons().join(" | ")))
        })
        .collect();
    assert!(commands(BENIGN).count() >= 300);
    assert!(
        high.is_empty(),
        "{} everyday commands rate high:\n{}",
        high.len(),
        high.join("\n")
    );
}

#[test]
fn every_dangerous_command_rates_high() {
    let below: Vec<String> = commands(DANGEROUS)
        .filter_map(|c| {
            let a = analyse_command(c, place());
            (a.risk != Risk::High).then(|| format!("{c}  ({}: {})", a.risk, a.all_reasons().join(" | ")))
        })
        .collect();
    assert!(
        below.is_empty(),
        "{} dangerous commands rate below high:\n{}",
        below.len(),
        below.join("\n")
    );
}

