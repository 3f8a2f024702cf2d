//! MCP tool servers under Reins' policy, through the real `reins` binary: the real filesystem server
//! from npm (installed by `scripts/agents`) for what a user does with it, and a fixture server
//! (`tests/fixtures/mcp_server.py`) that crashes, hangs or changes its tools on purpose.

mod memory_server;
mod reviews;
mod servers;

use crate::acp::agents_bin;
use crate::common::{self, text, Cli};

use reins_tests::mock_llm::MockLlm;

/// Registers the filesystem server as `fs`, on the run's workspace.
pub(super) fn add_fs(cli: &Cli) -> anyhow::Result<()> {
    let program = agents_bin("mcp-server-filesystem")?.join("mcp-server-filesystem");
    let out = cli
        .strict_cmd()
        .args(["mcp", "add", "fs", "--"])
        .arg(program)
        .arg("{workspace}")
        .output()?;
    anyhow::ensure!(out.status.success(), "mcp add: {}", text(&out));
    Ok(())
}

/// Registers the fixture server as `fixture`, keeping its state in `state`.
pub(super) fn add_fixture(cli: &Cli, state: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(state)?;
    let out = cli
        .strict_cmd()
        .args(["mcp", "add", "fixture", "--timeout", "3", "--may-write"])
        .arg(state)
        .args(["--", "python3"])
        .arg(common::repo_root().join("tests/fixtures/mcp_server.py"))
        .arg(state)
        .output()?;
    anyhow::ensure!(out.status.success(), "mcp add: {}", text(&out));
    Ok(())
}

/// An LLM run under the built-in policy, offered the tools of the registered server `mcp`.
pub(super) fn llm_run(cli: &Cli, mock: &MockLlm, goal: &str, mcp: &str) -> std::process::Command {
    let mut c = crate::llm::llm_run(cli, mock, goal, true);
    c.args(["--mcp", mcp]);
    c
}

/// The workspace's real path, as the filesystem server wants absolute paths.
pub(super) fn ws_path(cli: &Cli, rel: &str) -> anyhow::Result<String> {
    Ok(std::fs::canonicalize(cli.ws())?
        .join(rel)
        .to_string_lossy()
        .into_owned())
}

pub(super) fn with_policy(
    cli: &Cli,
    c: &mut std::process::Command,
    rules: &str,
) -> anyhow::Result<()> {
    let file = cli.tmp.path().join("mcp-policy.toml");
    std::fs::write(&file, rules)?;
    c.env("REINS_POLICY", file);
    Ok(())
}

pub(super) fn fixture_rules() -> &'static str {
    "[[rules]]\ndecision = \"allow\"\nserver = \"fixture\"\n"
}
