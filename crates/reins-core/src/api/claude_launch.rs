//! How Reins starts a headless Claude Code (see [`super::claude_run`]): its keys, the hook that
//! judges each of its calls, the lock that keeps one Claude Code per session, and a worker's start
//! of a session again once a person decided its card.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::claude_run::{ClaudeRunOutcome, ClaudeRunRequest};
use super::Reins;
use crate::agent::claude::Spec;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::keys::Secret;
use crate::progress::Observer;

/// Set for a headless Claude Code to the session's id: Reins' hooks, if the user installed them,
/// let that session's calls through to the control channel instead of deciding them twice.
pub const HEADLESS_ENV: &str = "REINS_CLAUDE_HEADLESS";

/// Set for a headless Claude Code started again on its session to the step whose card outlived
/// the Reins that asked: Reins' hook leaves that call to the control channel, where the card
/// answers it (the hook, another process, cannot tell whether it was answered already).
pub const CARRIED_ENV: &str = "REINS_CLAUDE_CARRIED";

/// What Claude Code is told when a worker starts it again after a person decided its card.
pub const AFTER_REVIEW: &str = "A person has now decided the tool call you were waiting on. Carry on with your task where you left off: make that tool call again to get its answer.";

impl Reins {
    /// A worker's turn on headless run `id` (see [`crate::engine::Engine::headless_claude`]): Claude Code is
    /// started again on its session, as it was first started, and stopped again at the next card.
    /// A session another process runs is an [`Error::Conflict`].
    pub(crate) async fn resume_headless_claude(
        &self,
        id: RunId,
        spec: Spec,
        obs: &dyn Observer,
    ) -> Result<ClaudeRunOutcome> {
        let headless = spec.headless.unwrap_or_default();
        let decided = self.engine.unanswered_offer(id).await?.is_some();
        let log = self.data_dir().join("logs");
        let log = std::fs::create_dir_all(&log)
            .ok()
            .map(|()| log.join("claude-code.log"));
        let req = ClaudeRunRequest {
            goal: decided.then(|| AFTER_REVIEW.to_owned()),
            resume: Some(spec.session_id),
            program: Some(PathBuf::from(headless.program)),
            env: headless.env,
            pass_env: headless.pass_env,
            review_deadline: headless.review_deadline_s.map(Duration::from_secs),
            log,
            stop_at_card: true,
        };
        self.run_claude(req, Path::new(&spec.cwd), obs).await
    }

    /// The keys named by `env`, read from the keyring now: a missing one stops the run before
    /// anything starts.
    pub(super) async fn claude_keys(
        &self,
        env: &BTreeMap<String, String>,
    ) -> Result<Vec<(String, Secret)>> {
        let mut keys = Vec::new();
        for (var, name) in env {
            let store = std::sync::Arc::clone(self.engine.secrets());
            match crate::keys::get_blocking(store, name).await? {
                Some(secret) => keys.push((var.clone(), secret)),
                None => return Err(crate::keys::KeyError::Missing(name.clone()).into()),
            }
        }
        Ok(keys)
    }

    /// The settings that give a headless Claude Code Reins' `PreToolUse` hook (`--headless`), and
    /// the config dir the hook reads the policy from.
    pub(super) fn headless_hook(&self) -> Result<(Value, PathBuf)> {
        let reins = self.engine.reins_program().ok_or_else(|| {
            Error::Invalid(
                "Reins cannot tell where its `reins` program is, and without its hook Claude Code would let some calls through unjudged: put `reins` on PATH".into(),
            )
        })?;
        let quote = |p: &Path| shell_words::quote(&p.to_string_lossy()).into_owned();
        let mut command = format!(
            "{} --data-dir {}",
            quote(&reins.program),
            quote(&reins.data_dir)
        );
        if self.policy_file() != reins.config_dir.join("policy.toml") {
            command.push_str(&format!(" --policy {}", quote(self.policy_file())));
        }
        command.push_str(" hook claude-code --headless");
        let settings = json!({"hooks": {"PreToolUse": [{
            "matcher": "*",
            "hooks": [{"type": "command", "command": command,
                       "timeout": crate::agent::claude::settings::TIMEOUT_SECS}],
        }]}});
        Ok((settings, reins.config_dir.clone()))
    }

    /// Holds session `session` for this process: refused while another holds it.
    pub(super) fn claude_session_lock(&self, session: &str) -> Result<std::fs::File> {
        let dir = self.data_dir().join("locks");
        let io = |context: String| move |source| Error::Io { context, source };
        std::fs::create_dir_all(&dir).map_err(io(format!("cannot create {}", dir.display())))?;
        let path = dir.join(format!("claude-code-{session}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(format!("cannot open {}", path.display())))?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Conflict(format!(
                "Claude Code session {session} is already running under Reins (a `reins run --claude`, or a worker)"
            ))),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(io(format!("cannot lock {}", path.display()))(e))
            }
        }
    }
}

/// `program` if it names a file, else the first of that name on PATH.
pub(super) fn find_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
