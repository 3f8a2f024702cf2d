//! Values the decision tests build their facts from: actions, rows, a fixed policy. Nothing here
//! touches a database or the disk.

use crate::approval::{ContextSummary, Matcher, Scope, Status};
use crate::compat::Compat;
use crate::digest::Digest;
use crate::ids::RunId;
use crate::journal::FileImage;
use crate::policy::shell::Place;
use crate::policy::{Context, Decision, Policy, Protected, Risk, Verdict};
use crate::run::RunState;
use crate::step::{StepKind, StepStatus};
use crate::store::approvals::ApprovalRow;
use crate::store::grants::GrantRow;
use crate::store::runs::RunRow;
use crate::store::steps::StepRow;
use crate::action::shell::{CommandForm, ShellCommand};
use crate::action::{Action, RecordedCall, ToolCall};
use crate::tools::EffectPlan;
use crate::workspace::RelPath;

pub static NOTHING_PROTECTED: Protected = Protected::NONE;

pub fn place() -> Place<'static> {
    Place {
        root: std::path::Path::new("/nonexistent/reins-test-workspace"),
        protected: &NOTHING_PROTECTED,
    }
}

/// A policy that gives every action the same risk and decision.
pub struct Fixed(pub Risk, pub Decision);

impl Policy for Fixed {
    fn classify(&self, action: &Action, _cx: &Context<'_>) -> Verdict {
        Verdict {
            on_timeout: None,
            risk: self.0,
            decision: self.1,
            reasons: vec![format!("{}: fixed for the test", action.tool())],
            segments: Vec::new(),
        }
    }

    fn version(&self) -> String {
        "fixed/test".into()
    }
}

pub fn rel(path: &str) -> RelPath {
    RelPath::parse(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn write(path: &str, content: &str) -> Action {
    Action::Write {
        path: rel(path),
        content: content.into(),
    }
}

pub fn shell(line: &str) -> Action {
    Action::Shell(ShellCommand {
        form: CommandForm::Line(line.into()),
        timeout_s: 60,
        sandbox: Default::default(),
    })
}

pub fn image(path: &str, bytes: Option<&[u8]>) -> FileImage {
    FileImage {
        dir: None,
        path: path.into(),
        sha256: bytes.map(Digest::of),
    }
}

/// The plan of writing `new` over `old` at `path`, with a diff as its preview.
pub fn plan(path: &str, old: Option<&[u8]>, new: &[u8]) -> EffectPlan {
    EffectPlan {
        failed: false,
        pre: vec![image(path, old)],
        post: vec![image(path, Some(new))],
        pre_bytes: old.map(<[u8]>::to_vec).into_iter().collect(),
        ops: Vec::new(),
        preview: format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n+changed\n"),
        summary: format!("wrote {path}"),
    }
}

pub fn verdict(risk: Risk, decision: Decision) -> Verdict {
    Verdict {
        on_timeout: None,
        risk,
        decision,
        reasons: vec!["because".into()],
        segments: Vec::new(),
    }
}

pub fn grant(action: &Action, matcher: Matcher, pattern: &str) -> GrantRow {
    GrantRow {
        id: "0193cccc-0000-7000-8000-000000000001".into(),
        scope: Scope::Run,
        run_id: None,
        workspace: None,
        tool: action.tool().into(),
        matcher,
        pattern: pattern.into(),
        origin: "0193aaaa-0000-7000-8000-000000000001".into(),
        uses: 0,
        last_used_at: None,
        created_at: 0,
        revoked_at: None,
        // Made from a high-risk action: these fixtures test the matchers, not the risk bound.
        risk: Some(Risk::High),
        options: None,
    }
}

/// The verdict as the reviewer saw it, for `decide::bind`.
pub fn seen(v: &Verdict) -> Option<(Risk, &[String])> {
    Some((v.risk, &v.reasons))
}

pub fn step(seq: i64, tool: &str, hash: &str, status: StepStatus) -> StepRow {
    StepRow {
        seq,
        kind: StepKind::ToolCall,
        tool: tool.into(),
        action: recorded(tool),
        action_hash: hash.into(),
        why: None,
        status,
        risk: None,
        reasons: None,
        preview: None,
        result: Some("ok".into()),
        started_at: 0,
        ended_at: Some(0),
    }
}

pub fn approval(status: Status, expires_at: i64) -> ApprovalRow {
    ApprovalRow {
        id: "0193aaaa-0000-7000-8000-000000000001".into(),
        run_id: RunId::new(),
        step_seq: 2,
        tool: "fs.write".into(),
        action: recorded("fs.write"),
        action_hash: "ab".repeat(32),
        risk: Risk::Medium,
        reasons: vec!["writes a file".into()],
        segments: None,
        preview: "+x\n".into(),
        preview_sha256: "cd".repeat(32),
        pre_images: Vec::new(),
        context: ContextSummary::default(),
        policy: "fixed/test".into(),
        status,
        created_at: 0,
        expires_at,
        decided_at: None,
        decided_by: None,
        note: None,
        scope: None,
        edited_action: None,
        edited_hash: None,
        edited_preview: None,
        edited_risk: None,
        edited_reasons: None,
        superseded_by: None,
        stale_reason: None,
        on_timeout: crate::approval::OnTimeout::Deny,
        paused_at: None,
        siblings_rejected: 0,
        staged: None,
    }
}

pub fn run_row(state: RunState) -> RunRow {
    RunRow {
        id: RunId::new(),
        name: "n".into(),
        goal: "g".into(),
        workspace: "/w".into(),
        agent_kind: "script".into(),
        compat: Compat::default(),
        state,
        state_version: 3,
        fence: 2,
        owner: None,
        lease_until: None,
        last_error: None,
        created_at: 0,
        updated_at: 0,
        not_before: None,
        machine: None,
    }
}

/// A recorded call with no arguments.
pub fn recorded(tool: &str) -> RecordedCall {
    RecordedCall::raw(ToolCall {
        tool: tool.into(),
        args: serde_json::json!({}),
    })
}
