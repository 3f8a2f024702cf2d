//! A person's side of a review checkpoint: approve (optionally edited, optionally with a grant),
//! reject with a reason, expiry (fails closed), and staleness — a file that changed on disk after
//! the preview was made supersedes the approval with a fresh one, so nobody approves a diff that no
//! longer matches. Each decision is one guarded transaction with its audit events; a decision is
//! written only over a pending approval, so none is ever overwritten.

use serde::Serialize;

use crate::approval::preview;
use crate::approval::Status;
use crate::approval::{GrantSpec, Scope};
use crate::audit::event as ev;
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::ids::{ApprovalId, GrantId, RunId};
use crate::journal::FileImage;
use crate::policy::shell::Place;
use crate::policy::{Context, Decision};
use crate::run::{RunEvent, RunState};
use crate::store::approvals::{self, ApprovalRow, DecisionWrite, Edit};
use crate::store::grants::{self, GrantRow};
use crate::store::{audit, audit::Actor, runs, StoreError, Tx};
use crate::tools::{self, Action, ToolCall};
use crate::workspace::Workspace;

use super::Engine;

/// What a person approves with.
#[derive(Clone, Debug)]
pub struct ApproveRequest {
    pub scope: Scope,
    /// A pattern for the grant (`cargo test` for shell, a path glob for file tools); exact if None.
    pub pattern: Option<String>,
    /// The action as the person edited it: this is what runs.
    pub edited: Option<ToolCall>,
    pub note: Option<String>,
    /// The action hash the person saw; refused if the approval now holds another.
    pub expect_hash: Option<String>,
    pub by: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Decided {
    pub approval: ApprovalRow,
    pub run: RunId,
    pub run_state: RunState,
    pub grant: Option<GrantRow>,
}

/// The run an approval belongs to.
fn run_of(row: &ApprovalRow) -> Result<RunId> {
    Ok(row.run_id)
}

impl Engine {
    fn place<'a>(&'a self, ws: &'a Workspace) -> Place<'a> {
        Place {
            root: ws.root(),
            protected: self.policy.protected(),
        }
    }

    /// A pending approval by id (or unique prefix); an overdue one is expired first and refused.
    async fn pending(&self, id: &str) -> Result<ApprovalRow> {
        let row = approvals::find(self.store.pool(), id)
            .await?
            .ok_or_else(|| StoreError::NotFound {
                what: format!("approval {id}"),
            })?;
        match row.status {
            Status::Pending if row.expires_at <= now_ms() => {
                self.expire(&row).await?;
                Err(Error::Conflict(format!(
                    "approval {} expired before the decision; the action did not run",
                    row.id
                )))
            }
            Status::Pending => Ok(row),
            Status::Superseded => Err(Error::Conflict(format!(
                "approval {} was superseded ({}); review {} instead",
                row.id,
                row.stale_reason.as_deref().unwrap_or("replaced"),
                row.superseded_by.as_deref().unwrap_or("the newer approval")
            ))),
            other => Err(Error::Conflict(format!(
                "approval {} is already {}; a decision is never changed",
                row.id,
                other.as_str()
            ))),
        }
    }

    fn workspace_of(run: &runs::RunRow) -> Result<Workspace> {
        Workspace::open(std::path::Path::new(&run.workspace))
            .map_err(|e| Error::Conflict(format!("the run's workspace cannot be opened: {e}")))
    }

    pub async fn approve(&self, id: &str, req: ApproveRequest) -> Result<Decided> {
        let row = self.pending(id).await?;
        if let Some(want) = &req.expect_hash {
            if !row.action_hash.starts_with(want.as_str()) || want.len() < 8 {
                return Err(Error::Conflict(format!(
                    "approval {} is for action {}, not {want}; review it again",
                    row.id, row.action_hash
                )));
            }
        }
        let run_id = run_of(&row)?;
        let run = runs::get(self.store.pool(), run_id).await?;
        let ws = Self::workspace_of(&run)?;
        if let Some(new) = self.refresh_with(&row, &ws).await? {
            return Err(Error::Conflict(format!(
                "the files changed on disk after this review was prepared, so the diff shown is out of date; review approval {new} (the current diff) instead"
            )));
        }
        let original = serde_json::from_str::<ToolCall>(&row.action)
            .ok()
            .and_then(|c| Action::parse(&c, &ws).ok());
        let mut edited: Option<Edit> = None;
        let effective = match &req.edited {
            Some(call) => {
                if call.tool != row.tool {
                    return Err(Error::Invalid(format!(
                        "an edit must keep the tool {}; it names {}",
                        row.tool, call.tool
                    )));
                }
                let action = Action::parse(call, &ws)
                    .map_err(|e| Error::Invalid(format!("the edited action is invalid: {e}")))?;
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
                let plan = tools::plan_files(&action, &ws)
                    .map_err(|e| e.to_string())
                    .map_err(|e| {
                        Error::Invalid(format!("the edited action cannot be carried out: {e}"))
                    })?;
                let preview =
                    preview::of(&action, plan.as_ref(), &verdict, &resolved, self.place(&ws));
                edited = Some(Edit {
                    action: action.canonical_text(),
                    hash: action.hash().to_string(),
                    preview,
                    pre_images: plan.map(|p| p.pre).unwrap_or_default(),
                });
                action
            }
            None => original.ok_or_else(|| {
                Error::Conflict(format!(
                    "approval {}: the recorded action no longer validates; reject it",
                    row.id
                ))
            })?,
        };
        let spec = match (req.scope, &req.pattern) {
            (Scope::Once, Some(_)) => {
                return Err(Error::Invalid(
                    "a pattern needs a lasting scope (--scope run, workspace or always)".into(),
                ))
            }
            (Scope::Once, None) => None,
            (_, pattern) => Some(
                GrantSpec::for_action(&effective, pattern.as_deref(), self.place(&ws))
                    .map_err(Error::Invalid)?,
            ),
        };
        let now = now_ms();
        let grant = spec.map(|s| GrantRow {
            id: GrantId::new().to_string(),
            scope: req.scope,
            run_id: (req.scope == Scope::Run).then_some(row.run_id),
            workspace: (req.scope == Scope::Workspace).then(|| run.workspace.clone()),
            tool: s.tool,
            matcher: s.matcher,
            pattern: s.pattern,
            origin: row.id.clone(),
            uses: 0,
            last_used_at: None,
            created_at: now,
            revoked_at: None,
        });
        let mut tx = self.store.begin().await?;
        approvals::decide(
            &mut tx,
            &row.id,
            &DecisionWrite {
                status: Status::Approved,
                by: &req.by,
                note: req.note.as_deref(),
                scope: Some(req.scope),
                edited: edited.as_ref(),
                now,
            },
        )
        .await?;
        let mut events = vec![audit::Event::new(
            Actor::User,
            Some(run_id),
            ev::Approved {
                approval: row.id.clone(),
                step: row.step_seq,
                tool: row.tool.clone(),
                by: req.by.clone(),
                action_hash: row.action_hash.clone(),
                preview_sha256: row.preview_sha256.clone(),
                risk: row.risk,
                scope: req.scope,
                note: req.note.clone(),
            },
        )];
        if let Some(edit) = &edited {
            events.push(audit::Event::new(
                Actor::User,
                Some(run_id),
                ev::Edited {
                    approval: row.id.clone(),
                    original_hash: row.action_hash.clone(),
                    edited_hash: edit.hash.clone(),
                    edited_preview_sha256: Digest::of(edit.preview.as_bytes()),
                },
            ));
        }
        if let Some(g) = &grant {
            grants::insert(&mut tx, g).await?;
            events.push(audit::Event::new(
                Actor::User,
                Some(run_id),
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
        self.conclude(tx, &row.id, run_id, &events, now, grant)
            .await
    }

    pub async fn reject(&self, id: &str, reason: &str, by: &str) -> Result<Decided> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(Error::Invalid(
                "a rejection needs a reason: the agent is told it, and the audit log keeps it"
                    .into(),
            ));
        }
        let row = self.pending(id).await?;
        let run_id = run_of(&row)?;
        let now = now_ms();
        let mut tx = self.store.begin().await?;
        approvals::decide(
            &mut tx,
            &row.id,
            &DecisionWrite {
                status: Status::Rejected,
                by,
                note: Some(reason),
                scope: None,
                edited: None,
                now,
            },
        )
        .await?;
        let events = [audit::Event::new(
            Actor::User,
            Some(run_id),
            ev::Rejected {
                approval: row.id.clone(),
                step: row.step_seq,
                tool: row.tool.clone(),
                by: by.into(),
                action_hash: row.action_hash.clone(),
                preview_sha256: row.preview_sha256.clone(),
                reason: reason.into(),
            },
        )];
        self.conclude(tx, &row.id, run_id, &events, now, None).await
    }

    /// Expires every pending approval past its deadline. Returns their ids.
    pub async fn expire_due(&self) -> Result<Vec<String>> {
        let mut done = Vec::new();
        for row in approvals::pending_due(self.store.pool(), now_ms()).await? {
            match self.expire(&row).await {
                Ok(()) => done.push(row.id),
                // Decided meanwhile: nothing to expire.
                Err(Error::Store(StoreError::Conflict(_))) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    async fn expire(&self, row: &ApprovalRow) -> Result<()> {
        let run_id = run_of(row)?;
        let now = now_ms();
        let mut tx = self.store.begin().await?;
        approvals::decide(
            &mut tx,
            &row.id,
            &DecisionWrite {
                status: Status::Expired,
                by: "system",
                note: Some("no decision before the review timeout"),
                scope: None,
                edited: None,
                now,
            },
        )
        .await?;
        let events = [audit::Event::new(
            Actor::System,
            Some(run_id),
            ev::Expired {
                approval: row.id.clone(),
                step: row.step_seq,
                expires_at: row.expires_at,
            },
        )];
        self.decided(&mut tx, run_id, &events, now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(())
    }

    /// Commits a decision with its events and returns the approval as now stored.
    async fn conclude(
        &self,
        mut tx: Tx,
        id: &str,
        run: RunId,
        events: &[audit::Event],
        now: i64,
        grant: Option<GrantRow>,
    ) -> Result<Decided> {
        let run_state = self.decided(&mut tx, run, events, now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        let approval = approvals::get(self.store.pool(), id)
            .await?
            .ok_or_else(|| StoreError::NotFound {
                what: format!("approval {id}"),
            })?;
        Ok(Decided {
            approval,
            run,
            run_state,
            grant,
        })
    }

    /// Records a decision's events and queues the run to carry it out (a paused run stays paused and
    /// carries it out when resumed).
    async fn decided(
        &self,
        tx: &mut Tx,
        run: RunId,
        events: &[audit::Event],
        now: i64,
    ) -> Result<RunState> {
        audit::append_all(tx, None, events, now).await?;
        let state: String = sqlx::query_scalar("SELECT state FROM runs WHERE id = ?")
            .bind(run.to_string())
            .fetch_one(&mut **tx)
            .await
            .map_err(StoreError::from)?;
        if state == RunState::AwaitingApproval.as_str() {
            let (_, to, _) = runs::advance(tx, run, None, RunEvent::Decide, None, now).await?;
            return Ok(to);
        }
        Ok(RunState::parse(&state).unwrap_or(RunState::Paused))
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
        let run_id = run_of(&row)?;
        let run = runs::get(self.store.pool(), run_id).await?;
        let ws = Self::workspace_of(&run)?;
        self.refresh_with(&row, &ws).await
    }

    async fn refresh_with(&self, row: &ApprovalRow, ws: &Workspace) -> Result<Option<String>> {
        let reviewed = &row.pre_images;
        if reviewed.is_empty() {
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
        if changed.is_empty() {
            return Ok(None);
        }
        let why = format!(
            "{} changed on disk after the review was prepared",
            changed
                .iter()
                .map(|i| i.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let call: Option<ToolCall> = serde_json::from_str(&row.action).ok();
        let action = call.and_then(|c| Action::parse(&c, ws).ok());
        let (preview, pre, verdict) = match &action {
            Some(a) => {
                let verdict = self.policy.classify(
                    a,
                    &Context {
                        root: ws.root(),
                        resolved: &[],
                    },
                );
                match tools::plan_files(a, ws).map_err(|e| e.to_string()) {
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
        let now = now_ms();
        let new_id = ApprovalId::new().to_string();
        let mut fresh = row.clone();
        fresh.id = new_id.clone();
        fresh.preview_sha256 = Digest::of(preview.as_bytes()).to_string();
        fresh.preview = preview;
        fresh.pre_images = pre;
        fresh.created_at = now;
        if let Some(v) = &verdict {
            fresh.risk = v.risk;
            fresh.reasons = v.reasons.clone();
        }
        let run_id = run_of(row)?;
        let mut tx = self.store.begin().await?;
        approvals::insert(&mut tx, &fresh).await?;
        approvals::supersede(&mut tx, &row.id, &new_id, &why, now).await?;
        audit::append_all(
            &mut tx,
            None,
            &[audit::Event::new(
                Actor::Harness,
                Some(run_id),
                ev::Refreshed {
                    approval: row.id.clone(),
                    by: new_id.clone(),
                    why: why.clone(),
                    preview_sha256: fresh.preview_sha256.clone(),
                },
            )],
            now,
        )
        .await?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(Some(new_id))
    }
}
