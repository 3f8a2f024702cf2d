//! Step 5: a person's side of a review checkpoint — approve (optionally edited, optionally with a
//! grant), reject with a reason, expiry (fails closed), and staleness: a file that changed on disk
//! after the preview was made supersedes the approval with a fresh one, so nobody approves a diff
//! that no longer matches. Each decision is one change with its audit events, written only over a
//! pending approval, so none is ever overwritten.

use crate::approval::{preview, GrantSpec, Scope, Status};
use crate::event::{self as ev, Actor};
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::ids::{ApprovalId, GrantId, RunId};
use crate::journal::FileImage;
use crate::policy::shell::Place;
use crate::policy::{Context, Decision};
use crate::run::RunState;
use crate::store::approvals::{self, ApprovalRow, Edit};
use crate::store::grants::{self, GrantRow};
use crate::store::write::{Transition, Write};
use crate::store::{audit, runs, StoreError};
use crate::action::{Action, RecordedCall};
use crate::tools;
use crate::workspace::Workspace;

use super::commit::Change;
pub(super) use super::edit::edited_call;
pub use super::edit::EditedAction;
use super::{Engine, Silent};

/// What a person approves with.
#[derive(Clone, Debug)]
pub struct ApproveRequest {
    pub scope: Scope,
    /// A pattern for the grant (`cargo test` for shell, a path glob for file tools); exact if None.
    pub pattern: Option<String>,
    /// The action as the person edited it: this is what runs.
    pub edited: Option<EditedAction>,
    pub note: Option<String>,
    /// The action hash the person saw; refused if the approval now holds another.
    pub expect_hash: Option<String>,
    pub by: String,
    /// A staged command's files (or folders) the person leaves out of what lands.
    pub leave_out: Vec<String>,
}

/// A decision as stored (the door turns it into its view).
#[derive(Clone, Debug)]
pub struct Decided {
    pub approval: ApprovalRow,
    pub run: RunId,
    pub run_state: RunState,
    pub grant: Option<GrantRow>,
}

/// Whether an approval can still be decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Openness {
    Open,
    /// Pending past its deadline and not paused yet: it times out now (pauses, or expires and the
    /// decision is refused).
    Overdue,
    /// Replaced by a newer approval (what to tell the person).
    Superseded(String),
    /// Decided already.
    Decided(String),
}

pub(super) fn openness(row: &ApprovalRow, now: i64) -> Openness {
    match row.status {
        Status::Pending if row.paused_at.is_none() && row.expires_at <= now => Openness::Overdue,
        Status::Pending => Openness::Open,
        Status::Superseded => Openness::Superseded(format!(
            "approval {} was superseded ({}); review {} instead",
            row.id,
            row.stale_reason.as_deref().unwrap_or("replaced"),
            row.superseded_by.as_deref().unwrap_or("the newer approval")
        )),
        other => Openness::Decided(format!(
            "approval {} is already {other}; a decision is never changed",
            row.id
        )),
    }
}

/// The approval must still be for the action the person saw (by its hash, at least 8 characters).
pub(super) fn check_seen(row: &ApprovalRow, expect_hash: Option<&str>) -> Result<()> {
    match expect_hash {
        Some(want) if want.len() < 8 || !row.action_hash.starts_with(want) => {
            Err(Error::Conflict(format!(
                "approval {} is for action {}, not {want}; review it again",
                row.id, row.action_hash
            )))
        }
        _ => Ok(()),
    }
}

/// The change that approves `row` (the caller adds an edit's and a grant's events and rows).
pub(super) fn approved(
    row: &ApprovalRow,
    by: &str,
    note: Option<String>,
    scope: Scope,
    edit: Option<Edit>,
    left_out: Vec<String>,
) -> Change {
    Change::rows(vec![Write::ApprovalDecided {
        id: row.id.clone(),
        status: Status::Approved,
        by: by.to_owned(),
        note: note.clone(),
        scope: Some(scope),
        edited: edit.map(Box::new),
    }])
    .event(audit::Event::new(
        Actor::User,
        Some(row.run_id),
        ev::Approved {
            approval: row.id.clone(),
            step: row.step_seq,
            tool: row.tool.clone(),
            by: by.to_owned(),
            action_hash: row.action_hash.clone(),
            preview_sha256: row.preview_sha256.clone(),
            risk: row.risk,
            scope,
            note,
            left_out,
        },
    ))
}

/// The paths of `images`, for a sentence.
fn paths_of(images: &[&FileImage]) -> String {
    images
        .iter()
        .map(|i| i.path.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A pattern needs a lasting scope: "once" grants nothing.
pub(super) fn check_scope(scope: Scope, pattern: Option<&str>) -> Result<()> {
    if scope == Scope::Once && pattern.is_some() {
        return Err(Error::Invalid(
            "a pattern needs a lasting scope (--scope run, workspace or always)".into(),
        ));
    }
    Ok(())
}

impl Engine {
    fn place<'a>(&'a self, ws: &'a Workspace) -> Place<'a> {
        Place {
            root: ws.root(),
            protected: self.policy.protected(),
        }
    }

    /// A pending approval by id (or unique prefix). An overdue one times out first: paused, it is
    /// still open and returned; expired, it is refused.
    pub(super) async fn pending(&self, id: &str) -> Result<ApprovalRow> {
        let row = approvals::find(self.store.pool(), id)
            .await?
            .ok_or_else(|| StoreError::NotFound {
                what: format!("approval {id}"),
            })?;
        match openness(&row, now_ms()) {
            Openness::Open => Ok(row),
            Openness::Overdue => self.time_out(row).await,
            Openness::Superseded(why) => Err(Error::Superseded(why)),
            Openness::Decided(why) => Err(Error::Conflict(why)),
        }
    }

    pub(super) fn workspace_of(run: &runs::RunRow) -> Result<Workspace> {
        Workspace::open(std::path::Path::new(&run.workspace))
            .map_err(|e| Error::Conflict(format!("the run's workspace cannot be opened: {e}")))
    }

    pub async fn approve(&self, id: &str, req: ApproveRequest) -> Result<Decided> {
        let row = self.pending(id).await?;
        check_seen(&row, req.expect_hash.as_deref())?;
        check_scope(req.scope, req.pattern.as_deref())?;
        let run = runs::get(self.store.pool(), row.run_id).await?;
        let ws = Self::workspace_of(&run)?;
        if let Some(new) = self.refresh_with(&row, &ws).await? {
            return Err(Error::Superseded(format!(
                "the files changed on disk after this review was prepared, so the diff shown is out of date; review approval {new} (the current diff) instead"
            )));
        }
        let (effective, edit) = match &req.edited {
            Some(edit) => {
                let (action, edit) = self.edit(&row, edit, &ws).await?;
                super::edit::refuse_leaving_a_stage(&row, &action)?;
                (action, Some(edit))
            }
            None => {
                let opened = self.opened(&row.action, "the approved action").await?;
                let action = Action::parse(opened.call(), &ws).map_err(|e| {
                    Error::Conflict(format!(
                        "approval {}: the recorded action no longer validates ({e}); reject it",
                        row.id
                    ))
                })?;
                (action, None)
            }
        };
        let now = now_ms();
        let grant = match req.scope {
            Scope::Once => None,
            scope => {
                let spec =
                    GrantSpec::for_action(&effective, req.pattern.as_deref(), self.place(&ws))
                        .map_err(Error::Invalid)?;
                Some(GrantRow {
                    id: GrantId::new().to_string(),
                    scope,
                    run_id: (scope == Scope::Run).then_some(row.run_id),
                    workspace: (scope == Scope::Workspace).then(|| run.workspace.clone()),
                    tool: spec.tool,
                    matcher: spec.matcher,
                    pattern: spec.pattern,
                    origin: row.id.clone(),
                    uses: 0,
                    last_used_at: None,
                    created_at: now,
                    revoked_at: None,
                    risk: Some(edit.as_ref().map_or(row.risk, |e| e.risk)),
                    options: spec.options,
                })
            }
        };
        let leaving = super::staging::leaving_out(&row, &req)?;
        let left_out = leaving.as_ref().map(|s| s.left_out.clone()).unwrap_or_default();
        let mut change = approved(&row, &req.by, req.note.clone(), req.scope, edit.clone(), left_out);
        if let Some(staged) = leaving {
            change.rows.push(Write::StagedLeftOut {
                id: row.id.clone(),
                staged: Box::new(staged),
            });
        }
        if let Some(edit) = &edit {
            change.events.push(audit::Event::new(
                Actor::User,
                Some(row.run_id),
                ev::Edited {
                    approval: row.id.clone(),
                    original_hash: row.action_hash.clone(),
                    edited_hash: edit.hash.clone(),
                    edited_preview_sha256: Digest::of(edit.preview.as_bytes()),
                },
            ));
        }
        if let Some(g) = &grant {
            change.rows.push(Write::Grant(Box::new(g.clone())));
            change.events.push(audit::Event::new(
                Actor::User,
                Some(row.run_id),
                ev::GrantCreated {
                    grant: g.id.clone(),
                    scope: g.scope,
                    tool: g.tool.clone(),
                    matcher: g.matcher,
                    pattern: g.pattern.clone(),
                    origin: g.origin.clone(),
                },
            ));
        }
        self.conclude(&row, change, grant).await
    }

    /// A person may edit an MCP call's arguments; the server, the tool and what the server said
    /// of it (its identity, description and hints) stay as the server gave them.
    async fn mcp_edit(
        &self,
        row: &ApprovalRow,
        mut edited: crate::action::McpCall,
        ws: &Workspace,
    ) -> Result<crate::action::McpCall> {
        let opened = self.opened(&row.action, "the approved action").await?;
        let Ok(Action::Mcp(original)) = Action::parse(opened.call(), ws) else {
            return Err(Error::Invalid("the reviewed action is not an MCP call".into()));
        };
        if (&edited.server, &edited.tool, &edited.identity)
            != (&original.server, &original.tool, &original.identity)
        {
            return Err(Error::Invalid(format!(
                "an edit of an MCP call may change its arguments only: it must stay `{}` of the server `{}`",
                original.tool, original.server
            )));
        }
        edited.description = original.description;
        edited.hints = original.hints;
        Ok(edited)
    }

    /// Checks a person's edit as the agent's proposal is checked: valid, not denied, plannable;
    /// the preview shown for it is what the person approves.
    async fn edit(
        &self,
        row: &ApprovalRow,
        edit: &EditedAction,
        ws: &Workspace,
    ) -> Result<(Action, Edit)> {
        // A sealed secret the person kept in place in the edit opens to what it stands for.
        let call = self.opened_call(edited_call(row, edit)?, "the edited action").await?;
        let action = Action::parse(&call, ws)
            .map_err(|e| Error::Invalid(format!("the edited action is invalid: {e}")))?;
        let action = match action {
            Action::Mcp(edited) => Action::Mcp(self.mcp_edit(row, edited, ws).await?),
            other => other,
        };
        let resolved = tools::fetch::addresses_of(&action)
            .await
            .map_err(Error::Invalid)?;
        let verdict = self.policy.classify(
            &action,
            &Context {
                root: ws.root(),
                resolved: &resolved,
            },
        );
        if verdict.decision == Decision::Deny {
            return Err(Error::Invalid(format!(
                "the edited action is denied by policy: {}",
                verdict.reasons.join("; ")
            )));
        }
        let plan = tools::plan_files(&action, ws)
            .map_err(|e| Error::Invalid(format!("the edited action cannot be carried out: {e}")))?;
        let preview = preview::of(&action, plan.as_ref(), &verdict, &resolved, self.place(ws));
        let edit = Edit {
            action: RecordedCall::of(&action),
            hash: action.hash().to_string(),
            preview,
            pre_images: plan.map(|p| p.pre).unwrap_or_default(),
            risk: verdict.risk,
            reasons: verdict.reasons,
        };
        Ok((action, edit))
    }

    /// A rejection; with `siblings`, the calls the agent queued after this one in the same turn
    /// (the card's context lists them) are refused with it, never proposed.
    pub async fn reject_with(
        &self,
        id: &str,
        reason: &str,
        by: &str,
        siblings: bool,
    ) -> Result<Decided> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(Error::Invalid(
                "a rejection needs a reason: the agent is told it, and the audit log keeps it"
                    .into(),
            ));
        }
        let row = self.pending(id).await?;
        let queued = if siblings {
            if row.context.pending.is_empty() {
                return Err(Error::Invalid(format!(
                    "approval {id}: no calls are queued after it to reject with it"
                )));
            }
            row.context.pending.clone()
        } else {
            Vec::new()
        };
        let mut change = Change::rows(vec![Write::ApprovalDecided {
            id: row.id.clone(),
            status: Status::Rejected,
            by: by.into(),
            note: Some(reason.into()),
            scope: None,
            edited: None,
        }])
        .event(audit::Event::new(
            Actor::User,
            Some(row.run_id),
            ev::Rejected {
                approval: row.id.clone(),
                step: row.step_seq,
                tool: row.tool.clone(),
                by: by.into(),
                action_hash: row.action_hash.clone(),
                preview_sha256: row.preview_sha256.clone(),
                reason: reason.into(),
                siblings: queued.clone(),
            },
        ));
        if !queued.is_empty() {
            change.rows.push(Write::SiblingsRejected {
                id: row.id.clone(),
                count: i64::try_from(queued.len()).unwrap_or(i64::MAX),
            });
        }
        self.conclude(&row, change, None).await
    }

    /// Commits a decision — the run waiting for it is queued to carry it out; a paused run stays
    /// paused and carries it out when resumed — and returns the approval as now stored.
    async fn conclude(
        &self,
        row: &ApprovalRow,
        change: Change,
        grant: Option<GrantRow>,
    ) -> Result<Decided> {
        let applied = self
            .commit(
                Some(row.run_id),
                change.moving(Transition::Decided),
                None,
                &Silent,
            )
            .await?;
        self.read_decided(row, &applied, grant).await
    }

    /// A committed decision on `row`, with the approval as now stored and where its run went.
    pub(super) async fn read_decided(
        &self,
        row: &ApprovalRow,
        applied: &super::commit::Applied,
        grant: Option<GrantRow>,
    ) -> Result<Decided> {
        let approval = approvals::get(self.store.pool(), &row.id)
            .await?
            .ok_or_else(|| StoreError::NotFound {
                what: format!("approval {}", row.id),
            })?;
        Ok(Decided {
            approval,
            run: row.run_id,
            run_state: applied.moved.as_ref().map_or(RunState::Paused, |m| m.to),
            grant,
        })
    }

    /// Re-checks a pending approval against the disk: if a file it would change is no longer what the
    /// preview was made from, it is superseded by a new approval with the current diff. Returns the new
    /// approval's id, or None when it is still accurate.
    pub async fn refresh_approval(&self, id: &str) -> Result<Option<String>> {
        let Some(row) = approvals::get(self.store.pool(), id).await? else {
            return Ok(None);
        };
        if row.status != Status::Pending {
            return Ok(None);
        }
        let run = runs::get(self.store.pool(), row.run_id).await?;
        let ws = Self::workspace_of(&run)?;
        self.refresh_with(&row, &ws).await
    }

    pub(super) async fn refresh_with(
        &self,
        row: &ApprovalRow,
        ws: &Workspace,
    ) -> Result<Option<String>> {
        let reviewed = &row.pre_images;
        // A staged card is made again by staging, when the run carries its approval out.
        if reviewed.is_empty() || row.staged.is_some() {
            return Ok(None);
        }
        let paths: Vec<_> = reviewed
            .iter()
            .filter_map(|i| ws.resolve(&i.path).ok())
            .collect();
        let now_hashes = ws.hashes(paths.iter()).unwrap_or_default();
        let changed: Vec<&FileImage> = reviewed
            .iter()
            .filter(|i| now_hashes.get(&i.path) != Some(&i.sha256))
            .collect();
        let opened = self.opened(&row.action, "the reviewed action").await?;
        let action = Action::parse(opened.call(), ws).ok();
        // The mode is part of what was reviewed: a file made executable since is a new review.
        let seen_mode = tools::mode_line(&row.preview);
        let mode_now = action.as_ref().and_then(|a| tools::mode_note(a, ws));
        let mode_changed = action.is_some() && seen_mode != mode_now.as_deref();
        // So is the folder each file is in (F1): another directory moved into its place is new.
        let replaced: Vec<&FileImage> = reviewed
            .iter()
            .filter(|i| {
                i.dir.is_some()
                    && ws
                        .resolve(&i.path)
                        .ok()
                        .and_then(|p| ws.folder_id(&p).ok())
                        .flatten()
                        != i.dir
            })
            .collect();
        if changed.is_empty() && !mode_changed && replaced.is_empty() {
            return Ok(None);
        }
        let why = if !replaced.is_empty() {
            format!(
                "the folder holding {} was replaced after the review was prepared (another directory was moved into its place)",
                paths_of(&replaced)
            )
        } else if changed.is_empty() {
            format!(
                "the mode of {} changed after the review was prepared ({})",
                paths_of(&reviewed.iter().collect::<Vec<_>>()),
                mode_now.as_deref().unwrap_or("no longer executable")
            )
        } else {
            format!(
                "{} changed on disk after the review was prepared",
                paths_of(&changed)
            )
        };
        let (preview, pre, verdict) = match &action {
            Some(a) => {
                let verdict = self.policy.classify(
                    a,
                    &Context {
                        root: ws.root(),
                        resolved: &[],
                    },
                );
                match tools::plan_files(a, ws) {
                    Ok(plan) => (
                        preview::of(a, plan.as_ref(), &verdict, &[], self.place(ws)),
                        plan.map(|p| p.pre).unwrap_or_default(),
                        Some(verdict),
                    ),
                    Err(e) => (
                        format!("this action can no longer be carried out as proposed: {e}\n"),
                        Vec::new(),
                        Some(verdict),
                    ),
                }
            }
            None => (
                "the recorded action no longer validates\n".into(),
                Vec::new(),
                None,
            ),
        };
        let new_id = ApprovalId::new().to_string();
        let mut fresh = row.clone();
        fresh.id = new_id.clone();
        fresh.preview_sha256 = Digest::of(preview.as_bytes()).to_string();
        fresh.preview = preview;
        fresh.pre_images = pre;
        fresh.created_at = now_ms();
        if let Some(v) = &verdict {
            fresh.risk = v.risk;
            fresh.reasons = v.reasons.clone();
        }
        let event = audit::Event::new(
            Actor::Harness,
            Some(row.run_id),
            ev::Refreshed {
                approval: row.id.clone(),
                by: new_id.clone(),
                why: why.clone(),
                preview_sha256: fresh.preview_sha256.clone(),
            },
        );
        let change = Change::rows(vec![
            Write::Approval(Box::new(fresh)),
            Write::ApprovalSuperseded {
                id: row.id.clone(),
                by: new_id.clone(),
                why,
            },
        ])
        .event(event);
        self.commit(Some(row.run_id), change, None, &Silent).await?;
        Ok(Some(new_id))
    }

    /// Revokes a standing grant by id or unique prefix, audited.
    pub async fn revoke_grant(&self, id: &str) -> Result<GrantRow> {
        let row = grants::find(self.store.pool(), id).await?;
        let change =
            Change::rows(vec![Write::GrantRevoked(row.id.clone())]).event(audit::Event::new(
                Actor::User,
                row.run_id,
                ev::GrantRevoked {
                    grant: row.id.clone(),
                    scope: row.scope,
                    tool: row.tool.clone(),
                    pattern: row.pattern.clone(),
                    uses: row.uses,
                },
            ));
        self.commit(None, change, None, &Silent).await?;
        Ok(row)
    }
}
