//! `reins mcp serve`: Reins' memory as an MCP server, driven by the MCP Inspector.

use crate::acp::agents_bin;
use crate::common::{text, Cli};

/// `reins mcp serve` as the MCP Inspector's CLI (a real MCP client from npm) drives it.
fn inspector(cli: &Cli, method: &[&str]) -> anyhow::Result<serde_json::Value> {
    let program = agents_bin("mcp-inspector")?.join("mcp-inspector");
    let out = std::process::Command::new(program)
        .arg("--cli")
        .arg(env!("CARGO_BIN_EXE_reins"))
        .arg("--data-dir")
        .arg(cli.data())
        .args(["mcp", "serve", "--method"])
        .args(method)
        .output()?;
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    let start = shown.find('{').unwrap_or(0);
    serde_json::from_str(&shown[start..])
        .map_err(|e| anyhow::anyhow!("the inspector printed no JSON ({e}): {}", text(&out)))
}

#[test]
fn the_memory_server_answers_a_real_mcp_client_under_the_memory_rules() -> anyhow::Result<()> {
    let cli = Cli::new()?;
    let out = cli
        .strict_cmd()
        .args([
            "memory",
            "add",
            "--category",
            "preference",
            "--key",
            "editor",
        ])
        .args(["--value", "uses vim keybindings"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out));

    let listed = inspector(&cli, &["tools/list"])?;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["memory_recall", "memory_suggest"], "{listed}");

    let recalled = inspector(
        &cli,
        &[
            "tools/call",
            "--tool-name",
            "memory_recall",
            "--tool-arg",
            "query=editor",
        ],
    )?;
    assert_eq!(
        recalled["content"][0]["text"], "preference.editor: uses vim keybindings",
        "{recalled}"
    );
    let suggested = inspector(
        &cli,
        &[
            "tools/call",
            "--tool-name",
            "memory_suggest",
            "--tool-arg",
            "category=style",
            "--tool-arg",
            "key=tone",
            "--tool-arg",
            "value=short answers",
            "--tool-arg",
            "confidence=0.95",
        ],
    )?;
    assert_eq!(
        suggested["content"][0]["text"], "remembered style.tone (version 1)",
        "{suggested}"
    );
    let facts = cli.json(&["memory", "list"])?.to_string();
    assert!(facts.contains("short answers"), "{facts}");
    let secret = inspector(
        &cli,
        &[
            "tools/call",
            "--tool-name",
            "memory_suggest",
            "--tool-arg",
            "category=preference",
            "--tool-arg",
            "key=token",
            "--tool-arg",
            "value=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        ],
    );
    let secret = secret
        .map(|v| v.to_string())
        .unwrap_or_else(|e| e.to_string());
    assert!(secret.contains("isError"), "a secret is refused: {secret}");
    assert!(!cli.json(&["memory", "list"])?.to_string().contains("ghp_"));

    assert!(cli
        .strict_cmd()
        .args(["memory", "off"])
        .output()?
        .status
        .success());
    let off = inspector(
        &cli,
        &[
            "tools/call",
            "--tool-name",
            "memory_recall",
            "--tool-arg",
            "query=editor",
        ],
    )?;
    let said = off["content"][0]["text"].as_str().unwrap_or_default();
    assert!(said.contains("memory is switched off"), "{off}");
    assert!(!said.contains("vim"), "{off}");

    let audit = cli.json(&["audit", "list", "--kind", "memory.served"])?;
    let events = audit["events"].as_array().map(Vec::len).unwrap_or(0);
    assert_eq!(events, 4, "every call is audited: {audit}");
    Ok(())
}
