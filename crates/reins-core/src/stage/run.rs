//! Running a command staged: confined as any command is, without network, against the view, with
//! the usual time limit and output caps and a size cap on its layer; then what it did, read.

use std::path::Path;
use std::time::Duration;

use super::{Staged, StagedError};
use crate::contain::{Confined, Profile, Setup};
use crate::tools::shell::{self, ShellOutcome};

/// The layer's size cap when none is given: 1 GiB, held in memory while the command runs.
pub const DEFAULT_CAP: u64 = 1024 * 1024 * 1024;

/// A staged command, ended: how it ran, and what it did to the view. It keeps the layer's copy
/// (the new bytes) on disk until it is dropped.
pub struct StagedRun {
    pub outcome: ShellOutcome,
    pub staged: Staged,
    /// The kernel's refusals, in words (what the profile stopped).
    pub refused: Vec<String>,
    /// Kept so the layer's copy stays on disk while this lives.
    _layer: Confined,
}

impl std::fmt::Debug for StagedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagedRun")
            .field("staged", &self.staged)
            .field("refused", &self.refused)
            .finish_non_exhaustive()
    }
}

impl StagedRun {
    /// The summary line, with what was refused.
    pub fn summary(&self) -> String {
        self.staged.summary(&self.refused)
    }

    /// Whether the staged run saw everything it needed (see [`Staged::whole`]).
    pub fn whole(&self) -> bool {
        self.staged.whole(&self.refused) && !self.outcome.timed_out
    }
}

/// Runs `argv` staged in `workspace` (absolute, resolved).
pub fn stage(
    setup: &Setup,
    workspace: &Path,
    argv: &[String],
    timeout: Duration,
    cap_bytes: u64,
) -> Result<StagedRun, StagedError> {
    let io = |e: std::io::Error| StagedError::io(workspace, e);
    let layer = setup
        .prepare(workspace, |p| Profile::command(p, false))
        .map_err(io)?
        .ok_or(StagedError::NoHelper)?;
    stage_confined(layer, workspace, argv, timeout, cap_bytes, |_| {})
}

/// [`stage`] with the confinement already prepared (a command's, without network); `started` is
/// told the pid of the process group it runs in, so a caller can end it early.
pub fn stage_confined(
    mut layer: Confined,
    workspace: &Path,
    argv: &[String],
    timeout: Duration,
    cap_bytes: u64,
    started: impl FnOnce(u32),
) -> Result<StagedRun, StagedError> {
    let io = |e: std::io::Error| StagedError::io(workspace, e);
    layer.stage(workspace, cap_bytes).map_err(io)?;
    let outcome = shell::run(argv, workspace, timeout, Ok(&layer), started).map_err(io)?;
    let Some(out) = layer.stage_out() else {
        return Err(StagedError::NoHelper);
    };
    if !out.join(crate::contain::stage::EXPORT_FILE).is_file() {
        if outcome.timed_out {
            return Err(StagedError::NotStaged(format!(
                "it ran past its time limit ({} s) and was stopped before its layer was copied",
                timeout.as_secs()
            )));
        }
        let said = outcome.report();
        return Err(StagedError::NotStaged(
            said.lines()
                .filter(|l| l.contains("reins:"))
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    let staged = Staged::read(&out, workspace)?;
    let mut refused = outcome.blocked.clone();
    // Each name it looked up is a host it tried to reach; the view's name server heard it.
    refused.extend(staged.looked_up.iter().map(|name| {
        format!(
            "{} tried to reach {name} (it looked the name up; staging gives no network)",
            outcome.program
        )
    }));
    // A command without network says so in its own words ("Could not resolve host"): each such
    // line is an attempt the profile stopped, unless it was listed already, or is a lookup the
    // names above say better.
    for captured in [&outcome.stdout, &outcome.stderr] {
        let text = captured.text();
        let tried = text
            .lines()
            .filter(|l| super::network_line(l))
            .filter(|l| staged.looked_up.is_empty() || !super::lookup_line(l))
            .filter(|l| !refused.iter().any(|r| r.contains(l.trim())))
            .take(4)
            .map(|l| {
                let l: String = l.trim().chars().take(200).collect();
                format!("{} tried the network: {l}", outcome.program)
            })
            .collect::<Vec<_>>();
        refused.extend(tried);
    }
    refused.extend(
        staged
            .protected
            .iter()
            .map(|p| format!("{} tried to write {p} (a protected path): not staged", outcome.program)),
    );
    Ok(StagedRun {
        outcome,
        staged,
        refused,
        _layer: layer,
    })
}
