//! The review facade: pending approvals and their decisions, grants, and explaining a policy
//! decision without running anything.

use std::path::Path;

use serde::Serialize;

use super::{ActionView, ApprovalView, DecidedView, GrantView, Reins};
use crate::action::{Action, ToolCall};
use crate::approval::Status;
use crate::engine::ApproveRequest;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::policy::{shell::Segment, Context, Decision, Risk};
use crate::store::approvals;
use crate::store::StoreError;
use crate::workspace::Workspace;

/// What the policy would decide about an action, and why.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PolicyCheck {
    pub tool: String,
    pub action: serde_json::Value,
    pub action_hash: String,
    pub risk: Risk,
    pub decision: Decision,
    pub reasons: Vec<String>,
    pub segments: Vec<Segment>,
    pub policy_file: Option<String>,
    pub policy_version: String,
}

impl Reins {
    /// Approvals, newest last; overdue ones time out first (they pause, or expire and fail closed).
    pub async fn approvals(
        &self,
        status: Option<Status>,
        run: Option<RunId>,
    ) -> Result<Vec<ApprovalView>> {
        self.views().approvals(status, run).await
    }

    /// One approval by id or unique prefix; a pending one is first checked against the disk, and
    /// if a file changed, the fresh approval that supersedes it is returned instead.
    pub async fn approval(&self, id: &str) -> Result<ApprovalView> {
        self.views().approval(id).await
    }

    /// Exactly what an approval would run (the person's edit when there is one), with any secret
    /// sealed at rest opened: for a person who asked to see it whole. Needs the keyring that
    /// sealed it.
    pub async fn approval_action(&self, id: &str) -> Result<ActionView> {
        let row = approvals::find(self.store().pool(), id)
            .await?
            .ok_or_else(|| StoreError::NotFound {
                what: format!("approval {id}"),
            })?;
        let (call, _) = row.effective_action();
        let opened = self
            .engine
            .reveal(call, &format!("approval {}'s action", row.id))
            .await?;
        Ok(opened.into())
    }

    pub async fn approve(&self, id: &str, req: ApproveRequest) -> Result<DecidedView> {
        let decided = self.engine.approve(id, req).await?;
        self.views().decided(decided).await
    }

    /// Approves exactly `cards`, once each, each bound to the action hash it showed, as `by`; if
    /// any moved since it was shown, none (a conflict naming each one that moved).
    pub async fn approve_batch(
        &self,
        cards: &[crate::engine::Shown],
        by: &str,
        note: Option<&str>,
    ) -> Result<Vec<DecidedView>> {
        let decided = self.engine.approve_batch(cards, by, note).await?;
        let mut out = Vec::with_capacity(decided.len());
        for d in decided {
            out.push(self.views().decided(d).await?);
        }
        Ok(out)
    }

    pub async fn reject(&self, id: &str, reason: &str, by: &str) -> Result<DecidedView> {
        self.reject_with(id, reason, by, false).await
    }

    /// A rejection; with `siblings`, the calls the agent queued after this one in the same turn
    /// (the card's context lists them) are refused with it. An agent that queues none (an external
    /// agent asks one call at a time) has nothing to reject with it: refused.
    pub async fn reject_with(
        &self,
        id: &str,
        reason: &str,
        by: &str,
        siblings: bool,
    ) -> Result<DecidedView> {
        let decided = self.engine.reject_with(id, reason, by, siblings).await?;
        self.views().decided(decided).await
    }

    /// Re-checks pending approvals against the disk (see `Engine::refresh_approval`) and expires
    /// overdue ones. Returns the ids of approvals that were superseded.
    pub async fn refresh_approvals(&self) -> Result<Vec<String>> {
        self.engine.expire_due().await?;
        let mut superseded = Vec::new();
        for row in approvals::list(self.store().pool(), Some(Status::Pending), None).await? {
            if self.engine.refresh_approval(&row.id).await?.is_some() {
                superseded.push(row.id);
            }
        }
        Ok(superseded)
    }

    pub async fn grants(&self) -> Result<Vec<GrantView>> {
        self.views().grants().await
    }

    pub async fn revoke_grant(&self, id: &str) -> Result<GrantView> {
        Ok(self.engine.revoke_grant(id).await?.into())
    }

    /// What the shell classifier knows about programs: each row's programs, what they can do
    /// beyond everyday use, and how each power is rated. Only the row naming `program`, if given.
    pub fn known_programs(program: Option<&str>) -> Vec<ProgramPowers> {
        use crate::policy::programs::capabilities;
        let rows: Vec<&capabilities::Entry> = match program {
            Some(p) => capabilities::entry(p).into_iter().collect(),
            None => capabilities::TABLE.iter().collect(),
        };
        rows.into_iter()
            .map(|e| ProgramPowers {
                programs: e.programs.iter().map(|p| (*p).to_owned()).collect(),
                powers: e.powers.iter().map(|p| p.as_str().to_owned()).collect(),
                handling: e.handling.split_whitespace().collect::<Vec<_>>().join(" "),
            })
            .collect()
    }

    /// Explains what the policy decides for a tool call on a workspace, without running anything.
    pub async fn policy_check(
        &self,
        tool: &str,
        args: serde_json::Value,
        workspace: &Path,
    ) -> Result<PolicyCheck> {
        let ws = Workspace::open(workspace).map_err(|e| Error::Invalid(e.to_string()))?;
        let call = ToolCall {
            tool: tool.into(),
            args,
        };
        let action = Action::parse(&call, &ws)?;
        let resolved = crate::tools::fetch::addresses_of(&action)
            .await
            .unwrap_or_default();
        let policy = self.engine.policy();
        let v = policy.classify(
            &action,
            &Context {
                root: ws.root(),
                resolved: &resolved,
            },
        );
        Ok(PolicyCheck {
            tool: tool.into(),
            action: action.canonical(),
            action_hash: action.hash().to_string(),
            risk: v.risk,
            decision: v.decision,
            reasons: v.reasons,
            segments: v.segments,
            policy_file: Some(self.policy_file().display().to_string()),
            policy_version: policy.version(),
        })
    }
}

impl Reins {
    /// One round of watching pending approvals: expires overdue ones, points `watch` at the files
    /// the pending ones would change, and supersedes every approval whose files changed since the
    /// last round. Returns the ids superseded.
    pub async fn watch_approvals(
        &self,
        watch: &mut crate::approval::watch::Watch,
    ) -> Result<Vec<String>> {
        self.engine.expire_due().await?;
        let pending = approvals::list(self.store().pool(), Some(Status::Pending), None).await?;
        let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
        for a in &pending {
            let Ok(row) = crate::store::runs::get(self.store().pool(), a.run_id).await else {
                continue;
            };
            for img in &a.pre_images {
                files.push((a.id.clone(), Path::new(&row.workspace).join(&img.path)));
            }
        }
        let changed = watch.changed();
        watch.sync(files.iter().map(|(_, p)| p.as_path()));
        let mut superseded = Vec::new();
        for (id, path) in &files {
            if changed.contains(path)
                && !superseded.contains(id)
                && self.engine.refresh_approval(id).await?.is_some()
            {
                superseded.push(id.clone());
            }
        }
        Ok(superseded)
    }
}

/// A row of the classifier's table of known programs.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgramPowers {
    pub programs: Vec<String>,
    /// command, code, read files, write files, upload, download, privilege, secrets.
    pub powers: Vec<String>,
    pub handling: String,
}
