//! Each kind of event as one sentence a person reads in the audit log, built from its typed
//! payload (the app's audit view and `reins audit list` show the same words). What the payload
//! holds only as an id, an approval's action, comes from [`Names`], which the reader fills in.

use std::collections::HashMap;

use serde::Serialize;

use crate::event::{Actor, Kind};
use crate::resume::plural;

/// What an id in a payload stands for, as the reader found it in the store.
pub trait Names {
    /// An approval's action in a few words: "fs.write on docs/note.md".
    fn approval(&self, id: &str) -> Option<String>;
    /// A profile fact's `category/key`, while it exists.
    fn fact(&self, id: &str) -> Option<String>;
}

/// What the ids of some events stand for, found in the store.
#[derive(Clone, Debug, Default)]
pub struct Lookup {
    /// Approval id → its action in a few words.
    pub approvals: HashMap<String, String>,
    /// Run id → its name.
    pub runs: HashMap<String, String>,
    /// Fact id → its `category/key`.
    pub facts: HashMap<String, String>,
}

impl Names for Lookup {
    fn approval(&self, id: &str) -> Option<String> {
        self.approvals.get(id).cloned()
    }
    fn fact(&self, id: &str) -> Option<String> {
        self.facts.get(id).cloned()
    }
}

impl Lookup {
    /// The approvals and runs `rows` name, looked up in the store.
    pub async fn of_rows(
        store: &crate::store::Store,
        rows: &[crate::store::audit::AuditRow],
    ) -> crate::error::Result<Self> {
        let distinct = |ids: Vec<String>| {
            let mut ids = ids;
            ids.sort();
            ids.dedup();
            ids
        };
        let mut found = Self::default();
        for id in distinct(rows.iter().filter_map(|r| r.approval_id.clone()).collect()) {
            if let Some(a) = crate::store::approvals::get(store.pool(), &id).await? {
                found.approvals.insert(id, action_words(a.action.call()));
            }
        }
        for id in distinct(rows.iter().filter_map(|r| r.run_id.clone()).collect()) {
            if let Some(name) = crate::store::runs::name(store.pool(), &id).await? {
                found.runs.insert(id, name);
            }
        }
        let facts = rows
            .iter()
            .filter(|r| r.kind.starts_with("memory."))
            .filter_map(|r| {
                let payload: serde_json::Value = serde_json::from_str(&r.payload).ok()?;
                payload["fact"].as_str().map(str::to_owned)
            })
            .collect();
        for id in distinct(facts) {
            if let Some(name) = crate::store::memory::name(store.pool(), &id).await? {
                found.facts.insert(id, name);
            }
        }
        Ok(found)
    }
}

/// The sentence for a stored event: its `kind` name, `actor` and payload as the chain holds them.
/// A payload that is none of its kind's shapes says so rather than guessing.
pub fn of_stored(kind: &str, actor: &str, payload: &serde_json::Value, names: &dyn Names) -> String {
    let actor = serde_json::from_value::<Actor>(serde_json::Value::String(actor.to_owned()));
    match (Kind::decode(kind, payload), actor) {
        (Some(k), Ok(actor)) => k.sentence(actor, names),
        _ => format!("{kind}: a payload this version cannot read as a sentence (open it)"),
    }
}

/// An enum's stored name in words: `awaiting_approval` → "awaiting approval".
fn words<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s.replace('_', " "),
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}


/// The first line of `text`, cut to `max` characters.
fn brief(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else if text.trim().lines().count() > 1 {
        format!("{line} …")
    } else {
        line.to_owned()
    }
}

/// Who acted, as the subject of a sentence.
fn who(actor: Actor) -> &'static str {
    match actor {
        Actor::User => "You",
        Actor::Agent => "The agent",
        Actor::Harness => "Reins",
        Actor::System => "The system",
    }
}

/// Where a person decided, when it was not a card: " from the notification".
fn from(by: &str) -> &'static str {
    if crate::event::from_notification(by) {
        " from the notification"
    } else {
        ""
    }
}

fn because(reasons: &[String]) -> String {
    if reasons.is_empty() {
        String::new()
    } else {
        format!(": {}", reasons.join("; "))
    }
}

impl Kind {
    /// One line for people. `actor` is who the event names as its cause.
    pub fn sentence(&self, actor: Actor, names: &dyn Names) -> String {
        let who = who(actor);
        let fact = |id: &str, category: &str| names.fact(id).unwrap_or_else(|| category.to_owned());
        let approval = |id: &str| {
            names
                .approval(id)
                .unwrap_or_else(|| format!("approval {}", id.chars().take(8).collect::<String>()))
        };
        match self {
            Kind::RunCreated(p) => format!(
                "{who} created run '{}' ({}): {}",
                p.name,
                p.agent_kind,
                brief(&p.goal, 120)
            ),
            Kind::RunStateChanged(p) => {
                let at = p.step.map(|s| format!(" at step {s}")).unwrap_or_default();
                match p.from {
                    Some(from) => format!(
                        "The run went from {} to {}{at}",
                        words(&from),
                        words(&p.to)
                    ),
                    None => format!("The run is {}{at}", words(&p.to)),
                }
            }
            Kind::PauseRequested(p) => format!(
                "{who} asked the run to pause (it was {}, now {})",
                words(&p.from),
                words(&p.to)
            ),
            Kind::DrainPauseRequested(p) => format!(
                "Worker {} is shutting down: the run pauses at its next safe point",
                p.worker
            ),
            Kind::Paused(_) => format!("{who} paused the run"),
            Kind::PausedAtSafePoint(p) => format!(
                "The run paused at checkpoint {}{}: {}",
                p.checkpoint,
                if p.verified { " (verified)" } else { "" },
                p.reason
            ),
            Kind::Resumed(p) => format!(
                "{who} resumed the run{}",
                if p.force { ", forcing it on" } else { "" }
            ),
            Kind::ResumedAfterResolve(_) => {
                "The run is queued again: its last unsettled effect was settled".into()
            }
            Kind::CompatOverridden(p) => format!(
                "{who} forced the run on although {}",
                crate::compat::describe(&p.mismatches)
            ),
            Kind::Cancelled(p) => format!("{who} cancelled the run: {}", p.reason),
            Kind::Suspended(p) => format!("The run stopped for a person: {}", brief(&p.reason, 200)),
            Kind::Recovered(p) => match p.continues_a_decision() {
                Some(step) => format!(
                    "Attempt {} went on with step {step} after the decision on it",
                    p.attempt
                ),
                None => format!(
                    "Attempt {} resumed the interrupted run: {}",
                    p.attempt,
                    brief(&p.text, 200)
                ),
            },
            Kind::RetryScheduled(p) => format!(
                "Retry {} in {:.1} s after a {} error: {}",
                p.n,
                p.delay_ms as f64 / 1000.0,
                p.class,
                brief(&p.error, 160)
            ),
            Kind::Finished(p) => format!("The run {}: {}", words(&p.state), brief(&p.summary, 200)),
            Kind::AttemptStarted(p) => {
                format!("Attempt {} started on worker {}", p.attempt, p.worker)
            }
            Kind::AttemptAdopted(p) => format!(
                "Attempt {} on worker {} took the run over from {}{}",
                p.attempt,
                p.worker,
                p.previous_owner.as_deref().unwrap_or("no one"),
                if p.previous_owner_gone { " (gone)" } else { "" }
            ),
            Kind::AttemptLost(p) => format!(
                "Worker {} lost the run: {}",
                p.worker.as_deref().unwrap_or("(unknown)"),
                p.why
            ),
            Kind::OrphanEnded(p) => format!(
                "Process {} ({}) left running by step {} was ended: {}",
                p.pid,
                brief(&p.command, 80),
                p.step,
                p.outcome
            ),
            Kind::CheckpointWritten(p) => format!(
                "Checkpoint {} written ({} level, {})",
                p.seq,
                words(&p.level),
                plural(p.size as u64, "byte", "bytes")
            ),
            Kind::DamageDetected(p) => format!(
                "Checkpoint {} is damaged ({}); {}",
                p.seq,
                words(&p.kind),
                p.recovery_point
                    .map(|r| format!("the run can go on from checkpoint {r}"))
                    .unwrap_or_else(|| "no earlier checkpoint is whole".into())
            ),
            Kind::PolicyDecided(p) => {
                let what = match p.decision {
                    crate::policy::Decision::Allow => "allowed",
                    crate::policy::Decision::Ask => "asked for review of",
                    crate::policy::Decision::Deny => "denied",
                };
                format!(
                    "The policy {what} step {} ({}, {} risk){}",
                    p.step,
                    p.tool,
                    words(&p.risk),
                    because(&p.reasons)
                )
            }
            Kind::StepFinished(p) => {
                format!("Step {} ({}) is {}", p.step, p.tool, words(&p.status))
            }
            Kind::IntentPending(p) => format!(
                "Step {} ({}) is about to take effect{}",
                p.step,
                p.tool,
                match p.post.len() {
                    0 => String::new(),
                    n => format!(" on {}", plural(n as u64, "file", "files")),
                }
            ),
            Kind::IntentConfirmed(p) => format!("Step {}'s effect is done and on disk", p.step),
            Kind::IntentRecovered(p) => format!(
                "Step {}'s effect was found done after a restart ({})",
                p.step, p.settled_by
            ),
            Kind::IntentFailed(p) => {
                format!("Step {}'s effect failed: {}", p.step, brief(&p.error, 160))
            }
            Kind::OutcomeUnknown(p) => format!(
                "No one can tell whether step {} ({}) took effect: {}",
                p.step, p.tool, p.why
            ),
            Kind::IntentResolved(p) => format!(
                "{who} settled step {} ({}) as {}{}",
                p.step,
                p.tool,
                words(&p.resolution),
                p.note
                    .as_deref()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default()
            ),
            Kind::ApprovalRequested(p) => format!(
                "Step {} waits for review: {} ({} risk){}{}",
                p.step,
                approval(&p.approval),
                words(&p.risk),
                because(&p.reasons),
                p.staged.as_ref().map(|s| format!("; {s}")).unwrap_or_default()
            ),
            Kind::ApprovalWaiting(p) => format!(
                "Step {} waits for its review again: {}",
                p.step,
                approval(&p.approval)
            ),
            Kind::Approved(p) => format!(
                "{who} approved {} ({}){}{}{}",
                approval(&p.approval),
                words(&p.scope),
                from(&p.by),
                p.left_out_said(),
                p.note.as_deref().map(|n| format!(": {n}")).unwrap_or_default()
            ),
            Kind::Edited(p) => format!(
                "{who} edited {} before approving it",
                approval(&p.approval)
            ),
            Kind::Rejected(p) => {
                let with = match p.siblings.len() {
                    0 => String::new(),
                    n => format!(
                        " (and the {} queued after it: {})",
                        plural(n as u64, "call", "calls"),
                        p.siblings.join(", ")
                    ),
                };
                format!(
                    "{who} rejected {}{}{with}: {}",
                    approval(&p.approval),
                    from(&p.by),
                    p.reason
                )
            }
            Kind::Expired(p) => format!(
                "The review of {} expired without a decision, so its action was refused",
                approval(&p.approval)
            ),
            Kind::BudgetSet(p) => p.sentence(),
            Kind::BudgetReached(p) => p.sentence(),
            Kind::BudgetRaised(p) => p.sentence(),
            Kind::TimedOut(p) => format!(
                "The review of {} timed out and paused: it stays open, and the run waits for it",
                approval(&p.approval)
            ),
            Kind::ClosedWithRun(p) => format!(
                "The review of {} closed with the run: {}",
                approval(&p.approval),
                p.why
            ),
            Kind::Superseded(p) => format!(
                "The review of {} no longer holds: {}",
                approval(&p.approval),
                p.why
            ),
            Kind::Refreshed(p) => format!(
                "The review of {} was shown again with the files as they are now: {}",
                approval(&p.approval),
                p.why
            ),
            Kind::ModelCalled(p) => {
                let calls = if p.tool_calls.is_empty() {
                    "with its words only".to_owned()
                } else {
                    format!("calling {}", p.tool_calls.join(", "))
                };
                let tokens = p
                    .usage
                    .as_ref()
                    .map(|u| format!(" ({} tokens in, {} out)", u.prompt_tokens, u.completion_tokens))
                    .unwrap_or_default();
                format!("The model {} answered step {} {calls}{tokens}", p.model, p.step)
            }
            Kind::QuestionAsked(p) => {
                format!("The agent asked at step {}: {}", p.step, brief(&p.question, 200))
            }
            Kind::QuestionAnswered(p) => format!(
                "{who} answered the question of step {}: {}",
                p.step,
                brief(&p.answer, 200)
            ),
            Kind::GrantCreated(p) => format!(
                "{who} allowed {} on {} ({}) without asking again",
                p.tool,
                p.pattern,
                words(&p.scope)
            ),
            Kind::GrantUsed(p) => format!(
                "Step {} ran without a review: a standing approval ({}) covers it",
                p.step,
                words(&p.scope)
            ),
            Kind::GrantRevoked(p) => format!(
                "{who} revoked the approval of {} on {} ({}), used {}",
                p.tool,
                p.pattern,
                words(&p.scope),
                plural(p.uses.max(0) as u64, "time", "times")
            ),
            Kind::PairingOffered(p) => format!(
                "{who} offered a one-time pairing code for a device named {:?}",
                p.name
            ),
            Kind::DevicePaired(p) => format!("Device {:?} was paired for remote approvals", p.name),
            Kind::DeviceRevoked(p) => format!("{who} revoked device {:?}", p.name),
            Kind::BoundToPermission(p) => format!(
                "Step {} ran under the permission granted at step {}",
                p.step, p.permission
            ),
            Kind::HandedToAgent(p) => format!(
                "The agent changed {} itself at step {}; their earlier content is kept for rollback",
                plural(p.pre.len().max(p.post.len()) as u64, "file", "files"),
                p.step
            ),
            Kind::Contained(p) => {
                let mut s = format!("Step {}: {} ran {}", p.step, p.program, p.enforced);
                for b in &p.blocked {
                    s.push_str(&format!("; blocked: {b}"));
                }
                s
            }
            Kind::AlreadyApplied(p) => format!(
                "Step {} was already done by step {}: confirmed without writing again",
                p.step, p.earlier
            ),
            Kind::AgentBriefed(p) => format!(
                "Reins briefed the agent with its goal and {} ({} tokens)",
                plural(p.facts_used.len() as u64, "profile fact", "profile facts"),
                p.tokens
            ),
            Kind::AgentIdentified(p) => match &p.confinement {
                Some(how) => format!("The agent is {}; it runs {how}", p.label()),
                None => format!("The agent is {}", p.label()),
            },
            Kind::AgentReported(p) => match p.detail.get("text").and_then(|t| t.as_str()) {
                Some(text) if p.what == crate::agent::acp::MESSAGE => {
                    format!("The agent said “{}”", brief(text, 120))
                }
                _ => format!("The agent reported its {}", words(&p.what)),
            },
            Kind::AgentBlocked(p) => format!("Blocked: {}", p.blocked.join("; ")),
            Kind::ChangedUnasked(p) => {
                let mut s = format!(
                    "The agent changed the workspace without asking Reins ({}): the run stopped",
                    crate::event::WorkspaceChange::in_words(&p.changes)
                );
                if let Some(n) = p.undo {
                    s.push_str(&format!("; roll back to checkpoint {n} to undo it"));
                }
                s
            }
            Kind::ChangedByCommand(p) => format!(
                "While the command allowed at step {} ran, the workspace changed: {}",
                p.step,
                crate::event::WorkspaceChange::in_words(&p.changes)
            ),
            Kind::ActedUnasked(p) => format!(
                "The agent ran '{}' ({}) without asking Reins: the run stopped",
                brief(&p.title, 120),
                p.kind
            ),
            Kind::RollbackSnapshot(p) => format!(
                "Reins kept the files as they were before rolling back to step {}",
                p.to
            ),
            Kind::RollbackPerformed(p) => format!(
                "{who} rolled the run back to step {} ({})",
                p.to,
                plural(p.paths.len() as u64, "file", "files")
            ),
            Kind::RetentionPruned(p) => format!(
                "Retention removed {} through {}, keeping the last {}",
                plural(p.checkpoints as u64, "checkpoint", "checkpoints"),
                p.through,
                p.keep
            ),
            Kind::RetentionGc(p) => format!(
                "{}Garbage collection removed {} and {} of finished runs",
                if p.dry_run { "(dry run) " } else { "" },
                plural(p.checkpoints, "checkpoint", "checkpoints"),
                plural(p.blob_files as u64, "blob file", "blob files")
            ),
            Kind::FactAdded(p) => format!(
                "Fact {} added by {} (version {})",
                fact(&p.fact, &p.category),
                origin(&p.origin),
                p.version
            ),
            Kind::FactEdited(p) => format!(
                "Fact {} edited by {} (now version {})",
                fact(&p.fact, &p.category),
                origin(&p.origin),
                p.version
            ),
            Kind::FactRefused(p) => format!("A {} fact was refused: {}", p.category, p.reason),
            Kind::FactDeleted(p) => format!("{who} deleted a {} fact", p.category),
            Kind::MemorySuggested(p) => format!(
                "The agent suggested a {} fact: {}",
                p.category,
                brief(&p.reason, 160)
            ),
            Kind::SuggestionAccepted(p) => format!(
                "{who} accepted a suggested fact: {}",
                fact(&p.fact, &p.category)
            ),
            Kind::SuggestionDismissed(p) => {
                format!("{who} dismissed a suggested {} fact", p.category)
            }
            Kind::MemoryCleared(p) => format!(
                "{who} cleared the profile memory: {} and {}",
                plural(p.facts, "fact", "facts"),
                plural(p.suggestions, "suggestion", "suggestions")
            ),
            Kind::MemoryServed(p) => format!(
                "{} called {} on Reins' memory{}: {}",
                p.agent.as_deref().unwrap_or("An agent"),
                p.tool,
                p.query
                    .as_deref()
                    .map(|q| format!(" about '{}'", brief(q, 80)))
                    .unwrap_or_default(),
                p.outcome
            ),
            Kind::MemorySwitchedOn(_) => format!("{who} switched the profile memory on"),
            Kind::MemorySwitchedOff(_) => format!("{who} switched the profile memory off"),
            Kind::MemorySettingChanged(p) => changed(who, &p.setting, p.from.as_deref(), &p.to),
            Kind::SettingChanged(p) => changed(who, &p.key, p.old.as_deref(), &p.new),
            Kind::AnchorCreated(p) => format!(
                "The audit log's anchor was made at {}: {}",
                p.path.display(),
                p.reason
            ),
            Kind::AnchorAcknowledged(p) => format!(
                "{} accepted the anchor made again at event {}",
                p.by, p.created_at_seq
            ),
            Kind::UnvouchedAccepted(p) => format!(
                "{} accepted {} from event {} on that no key of this machine vouched for",
                p.by,
                plural(p.events.max(0) as u64, "event", "events"),
                p.first_seq
            ),
            Kind::AuditVerified(p) => format!(
                "The audit chain was verified: {}, anchor {}",
                plural(p.events.max(0) as u64, "event", "events"),
                p.anchor
            ),
            Kind::AuditExported(p) => format!(
                "{who} exported {} as {} to {}",
                plural(p.count, "event", "events"),
                words(&p.format),
                p.path
            ),
        }
    }
}

/// Where a fact came from, in words: "you" for a person, else as stored.
fn origin(origin: &str) -> String {
    if origin == "user" || origin.starts_with("user:") {
        "you".into()
    } else {
        origin.replace('_', " ")
    }
}

fn changed(who: &str, what: &str, from: Option<&str>, to: &str) -> String {
    match from {
        Some(from) => format!("{who} changed {what} from {from} to {to}"),
        None => format!("{who} set {what} to {to}"),
    }
}

/// An action in a few words, for sentences: "fs.write on docs/note.md", "shell.exec `make`".
pub fn action_words(call: &crate::action::ToolCall) -> String {
    let arg = |k: &str| call.args.get(k).and_then(|v| v.as_str());
    if let Some(command) = arg("command") {
        return format!("{} `{}`", call.tool, brief(command, 80));
    }
    for key in ["path", "to", "url"] {
        if let Some(target) = arg(key) {
            return format!("{} on {}", call.tool, brief(target, 120));
        }
    }
    match (arg("server"), arg("tool")) {
        (Some(server), Some(tool)) => format!("{} {server}/{tool}", call.tool),
        _ => call.tool.clone(),
    }
}

#[cfg(test)]
mod tests;

