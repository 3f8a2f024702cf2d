//! Agents that run outside Reins, through their hooks: `reins hook claude-code` answers each
//! `PreToolUse` with Reins' decision and records each `PostToolUse`; `reins hooks install|uninstall`
//! puts Reins' entries into Claude Code's settings and takes them out (the app's Settings offers
//! the same).

use std::path::Path;

use super::Reins;
use crate::error::Result;

use crate::agent::claude::settings;
pub use crate::agent::claude::settings::{
    Change as SettingsChange, ClaudeHooksView, Scope as SettingsScope,
};
pub use crate::agent::Answer as HookAnswer;
pub use crate::engine::OutsideOutcome as HookOutcome;

pub use crate::agent::claude::link::{
    blocked_said as hook_blocked_said, Reply as HookReply, BLOCK as HOOK_BLOCK,
};

/// Inside a confined headless Claude Code: carries one hook call (`text`) to the link on `port`
/// of the Reins that started it, which runs the real hook, and returns what that did. Opens no
/// store, so it runs where the data dir is out of reach.
pub async fn hook_over_link(port: u16, text: &str) -> Result<HookReply> {
    use crate::agent::claude::link;
    let token =
        crate::contain::link::token_from(link::TOKEN_ENV).map_err(crate::error::Error::Invalid)?;
    link::ask(port, &token, text)
        .await
        .map_err(crate::error::Error::Invalid)
}

/// Largest hook input read (stdin).
pub const MAX_HOOK_INPUT: usize = crate::agent::claude::hook::MAX_INPUT_BYTES;

/// How long a hook waits for a person by default: a little under Claude Code's longest timeout
/// (600 s, which Reins installs), so the hook answers before Claude Code gives up on it.
pub const DEFAULT_HOOK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(590);

/// Claude Code on `PATH` and Reins' hooks in the settings of `scope`.
pub fn claude_hooks_view(scope: &SettingsScope) -> Result<ClaudeHooksView> {
    Ok(settings::hooks_view(scope)?)
}

/// The scope a face names: a project folder (which must exist), or the user's.
pub fn claude_scope(project: Option<&str>) -> Result<SettingsScope> {
    Ok(settings::scope(project)?)
}

/// The user's scope: `~/.claude/settings.json`.
pub fn claude_user_scope() -> Result<SettingsScope> {
    Ok(settings::user_scope()?)
}

/// Claude Code's managed settings: hooks there run whatever a project or user setting says.
pub fn claude_managed_scope() -> SettingsScope {
    settings::managed_scope()
}

/// Reins' hooks added to the settings of `scope`, running `command`: the change, not yet written.
pub fn claude_hooks_install(scope: &SettingsScope, command: &str) -> Result<SettingsChange> {
    Ok(settings::hooks_install(scope, command)?)
}

/// Reins' hooks taken out of the settings of `scope`: the change, not yet written.
pub fn claude_hooks_uninstall(scope: &SettingsScope) -> Result<SettingsChange> {
    Ok(settings::hooks_uninstall(scope)?)
}

/// Writes a change worked out by [`claude_hooks_install`] or [`claude_hooks_uninstall`].
pub fn write_settings(change: &SettingsChange) -> Result<()> {
    Ok(settings::write(change)?)
}

impl Reins {
    /// Answers one call of the hook of an agent of `kind` that runs outside Reins (`text`: what
    /// it wrote on stdin), waiting for a person until `deadline` at most. `headless`: the hook
    /// Reins gives a session it runs itself.
    pub async fn hook(
        &self,
        kind: &str,
        text: &str,
        deadline: std::time::Duration,
        headless: bool,
    ) -> Result<HookOutcome> {
        let outside = crate::agent::read_hook(kind, text, headless).await?;
        let until =
            crate::clock::now_ms() + i64::try_from(deadline.as_millis()).unwrap_or(i64::MAX / 2);
        self.engine.outside(outside, until).await
    }

    /// What the hook of an agent of `kind` prints for `answer`.
    pub fn hook_output(kind: &str, answer: &HookAnswer) -> Result<serde_json::Value> {
        Ok(crate::agent::hook_output(kind, answer)?)
    }

    /// The hook command this Reins installs: this program, with this data dir.
    pub fn claude_hook_command(&self, program: &Path) -> String {
        crate::agent::claude::settings::command(program, self.data_dir())
    }
}
