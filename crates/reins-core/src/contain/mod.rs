//! Containment: every process Reins starts (a command, an external agent, an MCP server) runs
//! confined by the kernel to what the policy and the person allowed. A [`Profile`] is pure data
//! derived from the action and its approval; the helper (the Reins binary started again as
//! `reins __contain`) applies it in a fresh single-threaded process and then starts the program;
//! [`Enforced`] is what the kernel actually held. See docs/containment.md.

pub mod enforced;
pub mod helper;
pub mod kernel;
pub mod launch;
pub mod profile;

pub use launch::{Confined, Setup};
pub use profile::Profile;

#[cfg(test)]
mod tests;
