//! End to end, in a real window: each test starts the real `reins-app` binary on its own data dir
//! and drives it like a person would, then checks what reached the disk and the CLI. Run by
//! `scripts/e2e` (Xvfb, a session bus, tauri-driver); `#[ignore]`d in a plain `cargo test`, which
//! has no display. `one_program.rs` needs none and runs in every `cargo test`.

mod agents;
mod budget;
mod claude_code;
mod dunst;
mod harness;
mod lifecycle;
mod notifications;
mod one_program;
mod policy;
mod remote;
mod reviews;
mod staged;
mod team;
mod telemetry;
mod tray;
mod views;
mod window;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use harness::{App, Home};
use thirtyfour::prelude::*;

const EDIT_PLAN: &str = r#"
name = "Fix the greeting"
goal = "Make the greeting friendly"

[[steps]]
tool = "fs.read"
why  = "see the current greeting"
args = { path = "greeting.txt" }

[[steps]]
tool = "fs.edit"
why  = "the greeting is rude"
args = { path = "greeting.txt", old = "go away", new = "hello there" }
"#;

const WRITE_PLAN: &str = r#"
name = "Write release notes"
goal = "Draft the release notes"

[[steps]]
tool = "fs.write"
why  = "start the notes"
args = { path = "NOTES.md", content = "draft by the agent\n" }
"#;

/// A command Reins does not know: high risk.
const HIGH_PLAN: &str = r#"
name = "Unknown tool"
goal = "Run a tool nobody knows"

[[steps]]
tool = "shell.exec"
why  = "it is what the readme says"
args = { argv = ["frobnicate", "--all"] }
"#;

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
