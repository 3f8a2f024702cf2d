//! The step protocol's decisions, made without IO (DESIGN §3). The engine gathers the facts — the
//! parsed action, the addresses a host resolves to, the plan of a file change, the live grants — and
//! these functions say what happens; the engine then does it. Risk is the policy's call, never the
//! agent's.

use std::net::IpAddr;

use crate::approval::{grant, preview};
use crate::digest::Digest;
use crate::journal::FileImage;
use crate::policy::shell::Place;
use crate::policy::rules::Unconfined;
use crate::policy::{Context, Decision, Policy, Risk, Verdict};
use crate::step::StepStatus;
use crate::store::grants::GrantRow;
use crate::store::steps::StepRow;
use crate::action::Action;
use crate::tools::EffectPlan;

/// What the harness gathered about a valid proposed action before judging it.
pub(super) struct Facts<'a> {
    pub action: &'a Action,
    /// The addresses a request's host resolved to: the policy judges addresses, not names.
    pub resolved: &'a [IpAddr],
    /// The effect's plan from the files as they are now (None: not a file effect), or why it
    /// cannot be planned.
    pub plan: Result<Option<&'a EffectPlan>, &'a str>,
    /// Why commands cannot be confined here (a kernel without Landlock, an older ABI); None
    /// where they are.
    pub unconfined: Option<&'a str>,
}

/// Steps 2–3 and the gate: what happens to a valid action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Ruling {
    /// It cannot be carried out as proposed; the agent hears why and nothing runs.
    Failed { verdict: Verdict, error: String },
    /// The policy denies it; the agent hears the reasons.
    Denied {
        verdict: Verdict,
        preview: String,
        result: String,
    },
    /// The policy asks a person — unless a live grant covers it (see [`granted`]).
    Ask { verdict: Verdict, preview: String },
    /// It runs.
    Run { verdict: Verdict, preview: String },
}

impl Ruling {
    pub fn verdict(&self) -> &Verdict {
        match self {
            Ruling::Failed { verdict, .. }
            | Ruling::Denied { verdict, .. }
            | Ruling::Ask { verdict, .. }
            | Ruling::Run { verdict, .. } => verdict,
        }
    }
}

/// Classifies the action (step 2), previews it (step 3) and applies the policy's decision.
pub(super) fn decide(facts: &Facts<'_>, policy: &dyn Policy, place: Place<'_>) -> Ruling {
    let mut verdict = policy.classify(
        facts.action,
        &Context {
            root: place.root,
            resolved: facts.resolved,
        },
    );
    // Where the kernel cannot hold a command to what its card shows, a person sees every one,
    // unless they chose otherwise in their own policy.
    if let Some(why) = facts.unconfined {
        if verdict.decision == Decision::Allow
            && runs_a_command(facts.action)
            && policy.unconfined_commands() == Unconfined::Review
        {
            verdict.decision = Decision::Ask;
            verdict.reasons.push(format!(
                "this machine cannot confine commands ({why}), so every command is reviewed; `[containment] unconfined_commands = \"allow\"` in your policy lets the rules decide"
            ));
        }
    }
    let plan = match facts.plan {
        Ok(plan) => plan,
        Err(error) => {
            return Ruling::Failed {
                verdict,
                error: error.into(),
            }
        }
    };
    let preview = preview::of(facts.action, plan, &verdict, facts.resolved, place);
    match verdict.decision {
        Decision::Deny => Ruling::Denied {
            result: denial(&verdict),
            verdict,
            preview,
        },
        Decision::Ask => Ruling::Ask { verdict, preview },
        Decision::Allow => Ruling::Run { verdict, preview },
    }
}

/// Whether `action` runs a command: a shell command, or an external agent's permission to run one.
fn runs_a_command(action: &Action) -> bool {
    match action {
        Action::Shell(_) => true,
        Action::Permission(p) => p.implied.as_deref().is_some_and(runs_a_command),
        _ => false,
    }
}

/// The live grant that covers an action the policy asks about, if any: it then runs without a
/// review. A grant never covers more than it was made for (high risk needs the exact action).
pub(super) fn granted<'g>(
    action: &Action,
    risk: Risk,
    grants: &'g [GrantRow],
    place: Place<'_>,
) -> Option<&'g GrantRow> {
    grants
        .iter()
        .find(|g| grant::covers(&g.terms(), action, risk, place))
}

/// What the agent is told when the policy denies an action.
pub(super) fn denial(verdict: &Verdict) -> String {
    format!("denied by policy: {}", verdict.reasons.join("; "))
}

/// Step 6: whether an approved action may run now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Bound {
    /// Exactly what was approved, on the files as they were reviewed.
    Run,
    /// Something changed since the review; it must be reviewed again (why).
    Stale(String),
    /// The policy denies it now.
    Denied(String),
}

/// Binds an approval to the action: the same hash, the same pre-images, a verdict no riskier and
/// with no reason the person was not shown, still not denied. `approved` is the verdict the person
/// saw (None: not known, so nothing can be bound to it).
pub(super) fn bind(
    approved_hash: &str,
    now: &Digest,
    reviewed_pre: &[FileImage],
    now_pre: &[FileImage],
    approved: Option<(Risk, &[String])>,
    verdict: &Verdict,
) -> Bound {
    if now.as_str() != approved_hash {
        return Bound::Stale(format!(
            "the action changed after it was approved (approved {}, now {}); it must be reviewed again",
            &approved_hash[..12.min(approved_hash.len())],
            now.short()
        ));
    }
    let replaced: Vec<&str> = now_pre
        .iter()
        // The same file with the same content, yet not the same: only its folder differs.
        .filter(|n| {
            reviewed_pre
                .iter()
                .any(|r| r.path == n.path && r.sha256 == n.sha256 && !r.same_as(n))
        })
        .map(|i| i.path.as_str())
        .collect();
    if !replaced.is_empty() {
        return Bound::Stale(format!(
            "the folder holding {} is not the one reviewed: another directory was moved into its place after the review; it must be reviewed again",
            replaced.join(", ")
        ));
    }
    if !FileImage::all_same(now_pre, reviewed_pre) {
        let changed: Vec<&str> = now_pre
            .iter()
            .filter(|i| !reviewed_pre.iter().any(|r| r.same_as(i)))
            .chain(
                reviewed_pre
                    .iter()
                    .filter(|i| !now_pre.iter().any(|n| n.path == i.path)),
            )
            .map(|i| i.path.as_str())
            .collect();
        return Bound::Stale(format!(
            "{} changed on disk after the review was prepared; the diff you approved no longer matches",
            if changed.is_empty() {
                "a file".to_owned()
            } else {
                changed.join(", ")
            }
        ));
    }
    if verdict.decision == Decision::Deny {
        return Bound::Denied(denial(verdict));
    }
    let Some((approved_risk, approved_reasons)) = approved else {
        return Bound::Stale(
            "this edit was approved before Reins recorded an edit's risk, so what it would run cannot be bound to what was shown; it must be reviewed again".into(),
        );
    };
    if verdict.risk > approved_risk {
        return Bound::Stale(format!(
            "the action is rated {} now, {} when it was approved: {}; it must be reviewed again",
            verdict.risk,
            approved_risk,
            verdict.reasons.join("; ")
        ));
    }
    let unseen: Vec<&str> = verdict
        .reasons
        .iter()
        .filter(|r| !approved_reasons.contains(r))
        .map(String::as_str)
        .collect();
    if !unseen.is_empty() {
        return Bound::Stale(format!(
            "the policy gives a reason the review did not show: {}; it must be reviewed again",
            unseen.join("; ")
        ));
    }
    Bound::Run
}

/// A step the journal already holds, proposed again after a resume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Reuse {
    /// Hand the recorded result to the agent; nothing runs again.
    Recorded,
    /// The agent now proposes something else for this step: not guessed at.
    Diverged(String),
    /// The recorded step has no outcome to reuse (its effect is unsettled).
    Unsettled(String),
}

pub(super) fn reuse(prev: &StepRow, tool: &str, action_hash: &str) -> Reuse {
    let seq = prev.seq;
    if prev.action_hash != action_hash {
        return Reuse::Diverged(format!(
            "step {seq}: the agent now proposes {tool} (action {}) but the journal recorded {} (action {}); not guessing which is right",
            &action_hash[..12.min(action_hash.len())],
            prev.tool,
            &prev.action_hash[..12.min(prev.action_hash.len())]
        ));
    }
    if !prev.status.is_reusable() {
        return Reuse::Unsettled(format!(
            "step {seq} ({}) is recorded as {:?} and cannot be reused",
            prev.tool,
            prev.status.as_str()
        ));
    }
    Reuse::Recorded
}

/// A reuse hands the agent a success only for a step that was done.
pub(super) fn reused_ok(status: StepStatus) -> bool {
    status == StepStatus::Done
}
