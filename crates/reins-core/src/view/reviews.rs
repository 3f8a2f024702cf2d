//! Reviews as the faces show them: an approval card with its context and exact preview, a decision,
//! and the grants decisions leave behind.

use serde::Serialize;

use crate::approval::{ContextSummary, Matcher, OnTimeout, Scope, Status};
use crate::ids::RunId;
use crate::journal::FileImage;
use crate::policy::shell::Segment;
use crate::policy::Risk;
use crate::run::RunState;
use crate::store::approvals::ApprovalRow;
use crate::store::grants::GrantRow;

use super::{ActionView, Views};
use crate::engine::Decided;
use crate::error::Result;
use crate::store::approvals;
use crate::store::grants;
use crate::store::StoreError;

/// A profile fact an agent's context used, with its current text (None: deleted since).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FactUse {
    pub id: String,
    pub fact: Option<String>,
}

/// A person's edit of the proposed action: what runs if approved.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EditView {
    pub action: ActionView,
    pub hash: String,
    pub preview: String,
    /// The edit's own verdict, as the person saw it (None: decided before it was recorded).
    pub risk: Option<Risk>,
    pub reasons: Vec<String>,
}

/// One review checkpoint: what the person is asked, with everything needed to judge it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ApprovalView {
    pub id: String,
    pub run_id: RunId,
    /// The agent of the card's run: an external agent's name and version ("OpenCode 1.18.33"),
    /// else Reins' own kind (`llm`, `script`).
    pub agent: String,
    pub step_seq: i64,
    pub tool: String,
    pub action: ActionView,
    /// The hash an approval binds to (of the exact canonical action).
    pub action_hash: String,
    /// What the action touches, in one line: a path, a command, a URL.
    pub subject: String,
    pub risk: Risk,
    pub reasons: Vec<String>,
    /// A shell command's parts, each with its own risk.
    pub segments: Vec<Segment>,
    /// The diff, parsed command or request: exactly what runs.
    pub preview: String,
    /// For a command: how it will run ("confined (Landlock ABI 7, seccomp): no network, writes
    /// inside the workspace …"), or why it will not be confined.
    pub runs: Option<String>,
    pub preview_sha256: String,
    /// The files as they were when the preview was made.
    pub pre_images: Vec<FileImage>,
    pub context: ContextSummary,
    /// The profile facts the agent's context used, resolved to their text now.
    pub facts: Vec<FactUse>,
    pub policy: String,
    pub status: Status,
    pub created_at: i64,
    /// When it times out, unless decided (meaningless once paused).
    pub expires_at: i64,
    /// What it becomes then: paused (open, no deadline) or expired (refused).
    pub on_timeout: OnTimeout,
    /// When it timed out and paused; it is still open, with no deadline.
    pub paused_at: Option<i64>,
    /// A rejection that refused this many calls queued after it as well.
    pub siblings_rejected: i64,
    /// A staged command: how it was staged and what it did ("staged (overlay in a user
    /// namespace): changes 2 files, creates 1, deletes none; no network used"); approving applies
    /// the diff in the preview and the command does not run again.
    pub staged: Option<String>,
    /// A staged command's files, as the person may leave some of them out when approving.
    pub staged_files: Vec<String>,
    pub decided_at: Option<i64>,
    pub decided_by: Option<String>,
    /// The reject reason, or a note with the approval.
    pub note: Option<String>,
    pub scope: Option<Scope>,
    pub edited: Option<EditView>,
    pub superseded_by: Option<String>,
    pub stale_reason: Option<String>,
}

impl ApprovalView {
    /// The view of `row`, with the facts its context used (the caller resolves them).
    pub(crate) fn of(row: ApprovalRow, facts: Vec<FactUse>, agent: String) -> Self {
        let ApprovalRow {
            id,
            run_id,
            step_seq,
            tool,
            action,
            action_hash,
            risk,
            reasons,
            segments,
            preview,
            preview_sha256,
            pre_images,
            context,
            policy,
            status,
            created_at,
            expires_at,
            decided_at,
            decided_by,
            note,
            scope,
            edited_action,
            edited_hash,
            edited_preview,
            edited_risk,
            edited_reasons,
            superseded_by,
            stale_reason,
            on_timeout,
            paused_at,
            siblings_rejected,
            staged,
        } = row;
        let action = ActionView::from(action);
        let edited = match (edited_action, edited_hash, edited_preview) {
            (Some(a), Some(hash), Some(preview)) => Some(EditView {
                action: a.into(),
                hash,
                preview,
                risk: edited_risk,
                reasons: edited_reasons.unwrap_or_default(),
            }),
            _ => None,
        };
        Self {
            subject: subject(edited.as_ref().map_or(&action, |e| &e.action)),
            id,
            run_id,
            agent,
            step_seq,
            tool,
            action,
            action_hash,
            risk,
            reasons,
            segments: segments.unwrap_or_default(),
            preview,
            runs: None,
            preview_sha256,
            pre_images,
            context,
            facts,
            policy,
            status,
            created_at,
            expires_at,
            on_timeout,
            paused_at,
            siblings_rejected,
            staged_files: staged
                .as_ref()
                .map(|s| s.files.iter().map(|f| f.path.clone()).collect())
                .unwrap_or_default(),
            staged: staged.map(|s| s.said()),
            decided_at,
            decided_by,
            note,
            scope,
            edited,
            superseded_by,
            stale_reason,
        }
    }
}

/// What an action touches, in one line.
/// What an approval is about, in a few words for a list: a sealed secret shows as a mark and any
/// other secret is masked, as in the preview.
fn subject(action: &ActionView) -> String {
    let raw = subject_raw(action);
    crate::secrets::redact(&crate::seal::shown(&raw)).into_owned()
}

fn subject_raw(action: &ActionView) -> String {
    let args = &action.args;
    if action.tool == crate::action::permission::TOOL {
        // What the external agent reported it will touch: its command, or its file.
        if let Some(command) = args["rawInput"]["command"].as_str() {
            return command.to_owned();
        }
        return crate::action::permission::reported_path(args).unwrap_or_default();
    }
    if action.tool == crate::action::mcp::TOOL {
        // The server and tool, and the path or URL it names, if its arguments name one.
        let target = ["path", "file_path", "uri", "url", "source", "destination"]
            .iter()
            .find_map(|k| args["arguments"][*k].as_str())
            .map(|t| format!(" {t}"))
            .unwrap_or_default();
        return format!(
            "{} · {}{target}",
            args["server"].as_str().unwrap_or("?"),
            args["tool"].as_str().unwrap_or("?")
        );
    }
    if action.tool == "shell.exec" {
        if let Some(command) = args["command"].as_str() {
            return command.to_owned();
        }
        if let Some(argv) = args["argv"].as_array() {
            return argv
                .iter()
                .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(" ");
        }
    }
    if let (Some(from), Some(to)) = (args["from"].as_str(), args["to"].as_str()) {
        return format!("{from} → {to}");
    }
    ["path", "url", "key"]
        .iter()
        .find_map(|k| args[*k].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A standing permission an approval created.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GrantView {
    pub id: String,
    pub scope: Scope,
    pub run_id: Option<RunId>,
    pub workspace: Option<String>,
    pub tool: String,
    pub matcher: Matcher,
    /// The action hash (exact), the argv a command starts with (prefix), or a path glob.
    pub pattern: String,
    /// The approval that created it.
    pub origin: String,
    pub uses: i64,
    pub last_used_at: Option<i64>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
    /// The risk of the action it was made from: it covers nothing riskier.
    pub risk: Option<Risk>,
    /// For a command pattern: the only options a covered command may have.
    pub options: Vec<String>,
}

impl From<GrantRow> for GrantView {
    fn from(row: GrantRow) -> Self {
        let GrantRow {
            id,
            scope,
            run_id,
            workspace,
            tool,
            matcher,
            pattern,
            origin,
            uses,
            last_used_at,
            created_at,
            revoked_at,
            risk,
            options,
        } = row;
        Self {
            id,
            scope,
            run_id,
            workspace,
            tool,
            matcher,
            pattern,
            origin,
            uses,
            last_used_at,
            created_at,
            revoked_at,
            risk,
            options: options.unwrap_or_default(),
        }
    }
}

/// A decision, as stored, and where it left the run.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DecidedView {
    pub approval: ApprovalView,
    pub run: RunId,
    pub run_state: RunState,
    pub grant: Option<GrantView>,
}

impl Views<'_> {
    /// Approvals, newest last; overdue ones are expired first (they fail closed).
    pub async fn approvals(
        &self,
        status: Option<Status>,
        run: Option<RunId>,
    ) -> Result<Vec<ApprovalView>> {
        self.e.expire_due().await?;
        let rows = approvals::list(self.e.store().pool(), status, run).await?;
        // The cards' runs in one query: a thousand pending cards are a thousand runs.
        let mut ids: Vec<RunId> = rows.iter().map(|r| r.run_id).collect();
        ids.sort_unstable();
        ids.dedup();
        let runs: std::collections::HashMap<RunId, crate::store::runs::RunRow> =
            crate::store::runs::get_many(self.e.store().pool(), &ids)
                .await?
                .into_iter()
                .map(|r| (r.id, r))
                .collect();
        let mut views = Vec::with_capacity(rows.len());
        for row in rows {
            let run = match runs.get(&row.run_id) {
                Some(run) => run.clone(),
                None => crate::store::runs::get(self.e.store().pool(), row.run_id).await?,
            };
            views.push(self.view_with_run(row, &run).await?);
        }
        Ok(views)
    }

    /// The view of an approval, with the facts its context used resolved to their text now.
    pub(crate) async fn approval_view(&self, row: ApprovalRow) -> Result<ApprovalView> {
        let run = crate::store::runs::get(self.e.store().pool(), row.run_id).await?;
        self.view_with_run(row, &run).await
    }

    async fn view_with_run(
        &self,
        row: ApprovalRow,
        run: &crate::store::runs::RunRow,
    ) -> Result<ApprovalView> {
        let facts = self.facts_by_id(row.context.memory.clone()).await?;
        let agent = match &run.compat.external_agent {
            Some(a) => a.label(),
            None => run.agent_kind.clone(),
        };
        let runs = self.how_it_runs(row.edited_action.as_ref().unwrap_or(&row.action), run);
        let mut view = ApprovalView::of(row, facts, agent);
        view.runs = runs;
        // An external agent names files by absolute path: show them as the workspace's.
        let root = format!("{}/", run.workspace.trim_end_matches('/'));
        if let Some(rel) = view.subject.strip_prefix(&root) {
            view.subject = rel.to_owned();
        }
        Ok(view)
    }

    /// How the command `call` would run for `run`'s workspace, for its card; None for what is not
    /// a command, or a workspace that is gone.
    fn how_it_runs(
        &self,
        call: &crate::action::RecordedCall,
        run: &crate::store::runs::RunRow,
    ) -> Option<String> {
        // Only a command (or an agent's permission to run one) has a way to run: a list of a
        // thousand file cards opens no workspace for it.
        if !matches!(call.tool(), "shell.exec" | crate::action::permission::TOOL) {
            return None;
        }
        let ws = crate::workspace::Workspace::open(std::path::Path::new(&run.workspace)).ok()?;
        let action = crate::action::Action::parse(call.call(), &ws).ok()?;
        let agent = run
            .compat
            .external_agent
            .as_ref()
            .and_then(|a| a.confinement.as_deref());
        let place = crate::policy::shell::Place {
            root: ws.root(),
            protected: self.e.policy().protected(),
        };
        crate::approval::preview::how_it_runs(
            &action,
            place,
            &self.e.containment().kernel(),
            agent,
            &self.e.policy().unconfined_programs(),
        )
    }

    /// One approval by id or unique prefix; a pending one is first checked against the disk, and
    /// if a file changed, the fresh approval that supersedes it is returned instead.
    pub async fn approval(&self, id: &str) -> Result<ApprovalView> {
        self.e.expire_due().await?;
        let row = approvals::find(self.e.store().pool(), id)
            .await?
            .ok_or_else(|| StoreError::NotFound {
                what: format!("approval {id}"),
            })?;
        if row.status == Status::Pending {
            if let Some(new) = self.e.refresh_approval(&row.id).await? {
                if let Some(fresh) = approvals::get(self.e.store().pool(), &new).await? {
                    return self.approval_view(fresh).await;
                }
            }
        }
        self.approval_view(row).await
    }

    pub async fn decided(&self, d: Decided) -> Result<DecidedView> {
        let Decided {
            approval,
            run,
            run_state,
            grant,
        } = d;
        Ok(DecidedView {
            approval: self.approval_view(approval).await?,
            run,
            run_state,
            grant: grant.map(GrantView::from),
        })
    }

    pub async fn grants(&self) -> Result<Vec<GrantView>> {
        Ok(grants::list(self.e.store().pool())
            .await?
            .into_iter()
            .map(GrantView::from)
            .collect())
    }
}
