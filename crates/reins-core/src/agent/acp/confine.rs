//! The external agent's own confinement: the profile it starts under, derived from what Reins
//! knows of it and what the person let it write, and the memory link that reaches Reins' store
//! from inside it. An agent Reins does not know gets the strictest profile: it reads what a command
//! reads and its own program, writes only its temp dir (its workspace writes go through Reins'
//! `fs/write_text_file`), and reaches only its model endpoint and the memory link.

use std::path::PathBuf;

use crate::contain::profile::Endpoint;
use crate::contain::{AgentReach, Confined, Profile};
use crate::mcp::link::Link;

use super::vendors;

/// What an agent process holds while it runs: its confinement (its temp dir goes with it) and
/// its memory link.
#[derive(Default)]
pub struct Held {
    pub confined: Option<Confined>,
    pub link: Option<Link>,
}

impl Held {
    /// How the agent runs, in words: "confined (Landlock ABI 7, seccomp, network namespace):
    /// network to 127.0.0.1:8080 only, writes only its own state", or why it is not.
    pub fn said(&self, workspace: &std::path::Path) -> String {
        self.confined.as_ref().map_or_else(
            || crate::contain::launch::NO_HELPER.to_owned(),
            |c| c.said(workspace),
        )
    }
}

impl super::AcpAgent {
    /// At the end of a turn: what the agent's confinement stopped since the last look, as one
    /// account for the run (protected paths it created, removed; refusals it printed).
    pub(super) async fn account_blocked(&mut self) {
        let Some(live) = self.live.as_ref() else { return };
        let process = &live.process;
        if let Some(c) = &process.held().confined {
            let lines = blocked(c, &self.services.root, process.stderr(), &mut self.blocked_seen).await;
            if !lines.is_empty() {
                self.accounts.push(crate::agent::Account::Blocked(lines));
            }
        }
    }

    /// Opens the memory link (when Reins has a store to serve it from) and prepares the agent's
    /// confinement; none when this process has no helper.
    pub(super) async fn confine(&self) -> Result<Held, String> {
        let mut held = Held::default();
        if let (Some(store), Some(_)) = (&self.services.store, &self.services.reins) {
            let caller = crate::mcp::serve::Caller {
                run: Some(self.services.run),
            };
            held.link = Some(
                crate::mcp::link::open(store.clone(), caller)
                    .await
                    .map_err(|e| format!("cannot open the memory link: {e}"))?,
            );
        }
        held.confined = prepare(
            &self.services,
            &self.spec.command,
            &self.spec.pass_env,
            &self.spec.may_write,
            held.link.as_ref().map(|l| l.port),
        )?;
        Ok(held)
    }
}

/// What an external agent's confinement stopped, in words, that `seen` did not hold yet: the
/// protected paths it created (removed now) and the refusals among what it printed (`stderr`).
pub(in crate::agent) async fn blocked(
    confined: &Confined,
    root: &std::path::Path,
    stderr: &crate::stderr::Tail,
    seen: &mut std::collections::BTreeSet<String>,
) -> Vec<String> {
    // Its stderr is read on its own task: let what it printed before ending the turn land.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let mut blocked = confined.sweep_said("the agent", root);
    for line in crate::contain::refusals(&stderr.text(16 * 1024)) {
        if seen.insert(line.clone()) {
            blocked.push(format!("the agent was refused: {line}"));
        }
    }
    blocked.truncate(16);
    blocked
}

/// The profile an external agent started as `command` runs under, prepared (none when this
/// process has no helper): what Reins knows of the agent, the folders the person let it write
/// (`may_write`; the workspace itself means the workspace minus the protected paths), and the
/// endpoints it needs: its model's and `link`, the port of the link back to this Reins.
pub(in crate::agent) fn prepare(
    services: &crate::agent::Services,
    command: &[String],
    pass_env: &[String],
    may_write: &[PathBuf],
    link: Option<u16>,
) -> Result<Option<Confined>, String> {
    let Some(home) = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
    else {
        return Err("HOME is not set to an absolute path: the agent's profile needs it".into());
    };
    let xdg = vendors::Xdg::of(&home, |v| std::env::var_os(v).map(PathBuf::from));
    let known = vendors::known(command, &home, &xdg);
    // Its state dirs exist before it starts, or no rule could name them.
    for dir in &known.state {
        if dir.extension().is_none() {
            let _ = std::fs::create_dir_all(dir);
        }
    }
    let root = &services.root;
    let mut state = known.state.clone();
    let mut writes_workspace = known.writes_workspace;
    for p in may_write {
        if p == root {
            writes_workspace = true;
        } else {
            state.push(p.clone());
        }
    }
    let mut programs =
        crate::contain::reach::program_trees(command, std::env::var_os("PATH").as_deref());
    if let Some(reins) = &services.reins {
        programs.extend(crate::contain::reach::program_trees(
            &[reins.program.display().to_string()],
            None,
        ));
    }
    // The model endpoint: the URLs on its command line, in its environment, in the config files in
    // its state dirs and in those its command line names; the hosted endpoints a known agent uses
    // when none is named.
    let mut endpoints = crate::contain::reach::endpoints_named(command, pass_env);
    let config_dirs: Vec<PathBuf> = known
        .state
        .iter()
        .filter(|d| d.is_dir())
        .cloned()
        .collect();
    endpoints.extend(crate::contain::reach::endpoints_in_configs(&config_dirs));
    endpoints.extend(crate::contain::reach::endpoints_in_files(
        &crate::contain::reach::config_files_named(command, pass_env),
    ));
    endpoints.extend(known.hosts.iter().map(|h| Endpoint::new(h, 443)));
    endpoints.extend(link.map(Endpoint::loopback));
    let reach = AgentReach {
        state,
        programs,
        writes_workspace,
        endpoints,
        serves_itself: known.serves_itself,
    };
    services
        .contain
        .prepare(root, |places| Profile::agent(places, &reach))
        .map_err(|e| format!("cannot prepare the agent's confinement: {e}"))
}
