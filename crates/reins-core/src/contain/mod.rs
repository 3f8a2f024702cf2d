//! Containment: every process Reins starts (a command, an external agent, an MCP server) runs
//! confined by the kernel to what the policy and the person allowed. A [`Profile`] is pure data
//! derived from the action and its approval; the helper (the Reins binary started again as
//! `reins __contain`) applies it in a fresh single-threaded process and then starts the program;
//! [`Enforced`] is what the kernel actually held. See docs/containment.md.

pub mod enforced;
pub mod helper;
pub mod kernel;
pub mod launch;
pub mod link;
pub mod lookup;
pub mod netns;
pub mod profile;
pub mod reach;
pub mod stage;
pub mod relay;

pub use launch::{Confined, Kernel, Setup};
pub use profile::{AgentReach, Profile};

/// The lines of a program's output that report the kernel refusing it ("Permission denied",
/// "Read-only file system", …), trimmed to 200 characters each: what it tried that its profile
/// stopped, in its own words.
pub fn refusals(output: &str) -> impl Iterator<Item = String> + '_ {
    const REFUSALS: &[&str] = &[
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "Network is unreachable",
    ];
    output
        .lines()
        .filter(|line| REFUSALS.iter().any(|r| line.contains(r)))
        .map(|line| line.trim().chars().take(200).collect())
}

#[cfg(test)]
mod tests;
