//! A headless Claude Code's confinement: the profile it starts under, the hook it is given (the
//! real one, or, confined, the one that reaches Reins over the link), and what the kernel refused
//! it, for the run's record.

use std::path::Path;

use serde_json::{json, Value};

use super::headless::Live;
use crate::agent::{Account, Services};
use crate::contain::link::Link;
use crate::contain::Confined;

impl Live {
    /// What its confinement stopped this turn, as an account (none when nothing, or unconfined).
    pub(super) async fn blocked(&mut self, spec: &super::Spec) -> Option<Account> {
        let confined = self.confined.as_ref()?;
        let root = Path::new(&spec.cwd);
        let mut lines = std::mem::take(&mut self.refused);
        lines.extend(
            crate::agent::acp::confine::blocked(confined, root, &self.piped.stderr, &mut self.seen)
                .await,
        );
        lines.truncate(16);
        (!lines.is_empty()).then_some(Account::Blocked(lines))
    }

    /// Who this agent is and how it runs, for the run's record.
    pub(super) fn identified(&self, root: &Path) -> crate::compat::ExternalAgent {
        crate::compat::ExternalAgent {
            name: "Claude Code".into(),
            version: String::new(),
            capabilities: Vec::new(),
            mode: Some("headless: every tool call asks Reins".into()),
            confinement: Some(self.confined.as_ref().map_or_else(
                || crate::contain::launch::NO_HELPER.to_owned(),
                |c| c.said(root),
            )),
            profile_sha256: self.confined.as_ref().map(|c| c.profile.hash().to_string()),
        }
    }

    /// Keeps the refusals in what tool `tool` gave back (a command's output, an error), when
    /// Claude Code runs confined: what the kernel stopped that the tool itself tried.
    pub(super) fn note_refusals(&mut self, tool: &str, result: &Value) {
        if self.confined.is_none() {
            return;
        }
        let text = match result {
            Value::String(s) => s.clone(),
            other => ["stdout", "stderr", "error"]
                .iter()
                .filter_map(|k| other.get(*k).and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        };
        for line in crate::contain::refusals(&text) {
            if self.seen.insert(line.clone()) {
                self.refused.push(format!("{tool} was refused: {line}"));
            }
        }
    }
}

/// The settings that give a headless Claude Code Reins' `PreToolUse` hook (`--headless`): the
/// hook itself, or, confined, the one that reaches it over the link on `link`.
pub(super) fn hook_settings(reins: &crate::agent::ReinsProgram, link: Option<u16>) -> Value {
    let quote = |p: &str| shell_words::quote(p).into_owned();
    let command = match link {
        Some(port) => format!(
            "{} hook claude-code --headless --link {port}",
            quote(&reins.program.to_string_lossy())
        ),
        None => real_hook(reins).iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "),
    };
    json!({"hooks": {"PreToolUse": [{
        "matcher": "*",
        "hooks": [{"type": "command", "command": command,
                   "timeout": super::settings::TIMEOUT_SECS}],
    }]}})
}

/// Reins' hook for a headless session, as run with this Reins' data dir and policy.
fn real_hook(reins: &crate::agent::ReinsProgram) -> Vec<String> {
    let mut argv = vec![
        reins.program.to_string_lossy().into_owned(),
        "--data-dir".into(),
        reins.data_dir.to_string_lossy().into_owned(),
    ];
    if let Some(policy) = &reins.policy_file {
        argv.extend(["--policy".into(), policy.to_string_lossy().into_owned()]);
    }
    argv.extend(["hook".into(), "claude-code".into(), "--headless".into()]);
    argv
}

/// Claude Code's confinement, and the link its hook reaches Reins over (the real hook runs
/// outside the sandbox with `set`); neither where this process has no helper. Claude Code carries
/// out the calls a person approved itself, so it writes the workspace minus the protected paths,
/// and its own state (`~/.claude`, `~/.claude.json`).
pub(super) async fn confine(
    services: &Services,
    reins: &crate::agent::ReinsProgram,
    headless: &super::Headless,
    set: &[(&str, &str)],
) -> Result<(Option<Confined>, Option<Link>), String> {
    if services.contain.helper.is_none() {
        return Ok((None, None));
    }
    let env = set
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let link = super::link::open(real_hook(reins), env)
        .await
        .map_err(|e| format!("cannot open the hook's link: {e}"))?;
    let confined = crate::agent::acp::confine::prepare(
        services,
        std::slice::from_ref(&headless.program),
        &headless.pass_env,
        &headless.may_write,
        Some(link.port),
    )?;
    let link = confined.is_some().then_some(link);
    Ok((confined, link))
}
