//! Staged commands in the step protocol. A command that needs review first runs staged (confined,
//! without network, against a copy-on-write view of the workspace); when the view saw all it did,
//! the card shows the real diff and approving applies exactly that through the journal, as a file
//! effect, without running the command again. When it did not (refused the network, a write
//! outside, the layer full, the time limit), the card says what staging saw and approving runs the
//! command itself, confined, as before.

use std::collections::BTreeMap;

use crate::action::ShellCommand;
use crate::error::{Error, Result};
use crate::stage::effect::StagedEffect;
use crate::stage::{StagedError, DEFAULT_CAP};
use crate::tools::{EffectPlan, FileOp};

use super::drive::Drive;
use super::record::StepRecord;
use super::DriveOutcome;

/// What staging made of a command waiting for review.
pub(super) enum Staging {
    /// The card shows its real effects; approving applies `plan`.
    Staged {
        effect: Box<StagedEffect>,
        plan: EffectPlan,
        preview: String,
    },
    /// Staging could not capture all it does: said above the command on its card.
    Partial(String),
    /// Not staged (no helper, the network or no confinement approved for it, the kernel).
    Off,
}

impl Drive<'_> {
    /// Stages `cmd` for its card, when it runs confined without network on a kernel that holds
    /// its profile in full.
    /// Its process group is ended at once if the run is lost meanwhile (cancelled, taken over).
    pub(super) async fn stage_for_review(
        &mut self,
        seq: i64,
        cmd: &ShellCommand,
    ) -> Result<Staging> {
        if !matches!(self.e.contain.kernel(), crate::contain::Kernel::Full(_)) {
            return Ok(Staging::Off);
        }
        let segments = cmd.analyse(self.place()).segments;
        if let Some(entry) = self.e.policy().staging().never(&segments) {
            return Ok(Staging::Partial(format!(
                "not staged: your policy's [staging] never lists {entry:?}, so approving runs the command itself, confined\n"
            )));
        }
        let prepared = self.prepare_command(cmd)?;
        let Ok(confined) = prepared.confined else {
            return Ok(Staging::Off);
        };
        if confined.profile.network != crate::contain::profile::Network::None {
            return Ok(Staging::Off);
        }
        // A command's own time passes before its card exists: say why nothing shows yet.
        self.obs.on(&crate::progress::Progress::Waiting {
            state: crate::run::RunState::Running,
            reason: masked(
                &format!(
                    "staging `{}` in a copy of the workspace before its review (up to {} s)",
                    cmd.display(),
                    cmd.timeout_s
                ),
                cmd,
            ),
        });
        let root = self.ws.root().to_owned();
        let argv = prepared.argv;
        let timeout = std::time::Duration::from_secs(cmd.timeout_s);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let handle = tokio::task::spawn_blocking(move || {
            crate::stage::run::stage_confined(confined, &root, &argv, timeout, DEFAULT_CAP, |pid| {
                let _ = tx.send(pid);
            })
        });
        let what = format!("{} (staged)", cmd.display());
        let staged = self
            .watch_group(seq, &what, rx, handle)
            .await
            .map_err(|e| Error::Io {
            context: "staging the command".into(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let run = match staged {
            Ok(run) => run,
            Err(e) => return Ok(Staging::Partial(masked(&format!("not staged: {e}\n"), cmd))),
        };
        let plan = match run.staged.plan(&self.ws, &[]) {
            Ok(p) => p,
            Err(e) => return Ok(Staging::Partial(masked(&format!("not staged: {e}\n"), cmd))),
        };
        let summary = run.summary();
        if !run.whole() || !plan.unexpressed.is_empty() {
            let mut seen: Vec<String> = run.refused.clone();
            seen.extend(plan.unexpressed.iter().map(|u| format!("not carried: {u}")));
            if run.outcome.timed_out {
                seen.push("it ran past its time limit".into());
            }
            return Ok(Staging::Partial(masked(
                &format!(
                    "staged first ({}): {summary}\n{}\nstaging could not capture all it does, so approving runs the command itself, confined\n",
                    run.staged.mode,
                    seen.iter()
                        .map(|s| format!("  {s}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
                cmd,
            )));
        }
        // The new bytes are durable before the card exists: an approval given after a restart
        // lands exactly these.
        for op in &plan.plan.ops {
            if let FileOp::Put { bytes, .. } = op {
                self.e.blobs().put(bytes).await?;
            }
        }
        // Kept, shown and told to the agent: a secret the command carried, or its output or a
        // file printed, is masked as in any preview.
        let report = masked(&run.outcome.report(), cmd);
        let effect = StagedEffect::of(
            &plan,
            &run.staged.mode,
            &summary,
            &report,
            run.outcome.ok(),
        );
        let preview = masked(
            &format!(
                "staged ({}): {}\napproving applies exactly these changes; the command does not run again\n{}--- the staged run\n{report}",
                run.staged.mode,
                summary,
                plan.plan.preview
            ),
            cmd,
        );
        Ok(Staging::Staged {
            effect: Box::new(effect),
            plan: plan.plan,
            preview,
        })
    }

    /// Whether the person's policy stages `cmd` always, and reviews it even where a rule allows it.
    pub(super) fn always_staged(&self, cmd: &ShellCommand) -> bool {
        let segments = cmd.analyse(self.place()).segments;
        self.e.policy().staging().always(&segments).is_some()
    }

    /// Parks a command for review, staged first where it can be: the card then shows what it did
    /// (and approving applies that), or what staging saw of it above the command.
    pub(super) async fn park_command(
        &mut self,
        rec: &StepRecord<'_>,
        cmd: &ShellCommand,
        supersedes: Option<(&str, &str)>,
    ) -> Result<DriveOutcome> {
        let staging = self.stage_for_review(rec.seq, cmd).await?;
        // Cancelled or taken over while it was staged: the group was ended, and no card is made.
        if self.heartbeat_lost() {
            return Ok(DriveOutcome::Lost {
                reason: format!(
                    "step {}: the run was cancelled or taken over while its command was staged; no review was made",
                    rec.seq
                ),
            });
        }
        match staging {
            Staging::Staged {
                effect,
                plan,
                preview,
            } => {
                let rec = StepRecord {
                    preview: Some(&preview),
                    ..*rec
                };
                self.park_staged(&rec, Some(&plan), supersedes, Some(*effect))
                    .await
            }
            Staging::Partial(note) => {
                let preview = format!("{note}{}", rec.preview.unwrap_or_default());
                let rec = StepRecord {
                    preview: Some(&preview),
                    ..*rec
                };
                self.park(&rec, None, supersedes).await
            }
            Staging::Off => self.park(rec, None, supersedes).await,
        }
    }

    /// The effect that lands a staged card's result now; `remaining`: only the files not yet at
    /// their new state (recovery of a half-applied result).
    pub(super) async fn staged_plan(
        &self,
        effect: &StagedEffect,
        remaining: bool,
    ) -> Result<EffectPlan> {
        let mut bytes = BTreeMap::new();
        for digest in effect.blobs() {
            let found = self.e.blob(digest).await?.ok_or_else(|| {
                Error::Invalid(format!("the staged result's blob {digest} is missing"))
            })?;
            bytes.insert(digest.clone(), found);
        }
        let mut plan = effect
            .plan(&self.ws, &bytes, remaining)
            .map_err(staged_error)?;
        plan.summary = format!(
            "{}; its result was applied as staged (the command did not run again)\n{}",
            plan.summary, effect.report
        );
        Ok(plan)
    }
}

/// The staged result without the files `req` leaves out; None when it leaves none out. Refused
/// for a card that is not a staged command's, for an edit, and for a path it does not change.
pub(super) fn leaving_out(
    row: &crate::store::approvals::ApprovalRow,
    req: &super::ApproveRequest,
) -> Result<Option<StagedEffect>> {
    if req.leave_out.is_empty() {
        return Ok(None);
    }
    let Some(staged) = row.staged.as_ref().filter(|_| req.edited.is_none()) else {
        return Err(Error::Invalid(
            "only a staged command's files can be left out, and not together with an edit".into(),
        ));
    };
    staged.leaving_out(&req.leave_out).map(Some).map_err(Error::Invalid)
}

/// `text` with every secret masked: those `cmd` carries wherever they occur, and any other.
fn masked(text: &str, cmd: &ShellCommand) -> String {
    let all = crate::secrets::redact(text);
    crate::secrets::redact_found_in(&all, &cmd.display()).into_owned()
}

fn staged_error(e: StagedError) -> Error {
    Error::Io {
        context: "applying a staged result".into(),
        source: std::io::Error::other(e.to_string()),
    }
}
