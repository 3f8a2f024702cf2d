//! The spans an audit event closes. A span is built when the event that ends it is committed: a
//! run's at `run.finished` or `run.cancelled`, an attempt's when the next one starts or the run
//! ends, a tool call's at `step.finished` or when its effect settles, a model call's at
//! `model.called`, a review's at its decision (or a grant's use). Its start and detail come from the committed rows it names, so
//! the same event always gives the same spans, with the same ids.

use std::collections::HashMap;

use crate::blob::BlobStore;
use crate::digest::Digest;
use crate::event::Kind as Event;
use crate::ids::RunId;
use crate::secrets::redact;
use crate::step::{StepKind, StepStatus};
use crate::store::audit::AuditRow;
use crate::store::{approvals, attempts, audit_read, runs, steps, telemetry, Store};

use super::ids::{self, Part};
use super::span::{Attr, Happening, Kind, Span};
use crate::error::{Error, Result};

/// The event kinds that close spans: a payload of one of these that does not read is an error.
const CLOSING: &[&str] = &[
    "run.finished",
    "run.cancelled",
    "attempt.started",
    "attempt.adopted",
    "step.finished",
    "intent.confirmed",
    "intent.failed",
    "intent.already_applied",
    "intent.outcome_unknown",
    "model.called",
    "approval.approved",
    "approval.rejected",
    "approval.expired",
    "approval.superseded",
    "grant.used",
];

/// What a pass keeps between the events of its page.
#[derive(Default)]
pub struct Page<'r> {
    /// The rows of the page before the one being read, in order.
    earlier: &'r [AuditRow],
    /// Each run's attempts, read once per page (dropped when an attempt starts).
    attempts: HashMap<RunId, Vec<attempts::AttemptRow>>,
    /// Each run's agent, as spans name it (`reins llm`).
    agents: HashMap<RunId, String>,
}

impl<'r> Page<'r> {
    /// The page's rows before the one about to be read.
    pub fn at(&mut self, earlier: &'r [AuditRow]) {
        self.earlier = earlier;
    }
}

/// The spans `row` closes (none for most events). `content` (the blob store the prompts are kept
/// in): prompts, replies, arguments and reasons go out too, redacted.
pub async fn spans_of(
    store: &Store,
    row: &AuditRow,
    page: &mut Page<'_>,
    content: Option<&BlobStore>,
) -> Result<Vec<Span>> {
    if !CLOSING.contains(&row.kind.as_str()) {
        return Ok(Vec::new());
    }
    let Some(run) = row.run_id.as_deref() else {
        return Ok(Vec::new());
    };
    let run: RunId = run.parse().map_err(|_| unreadable(row))?;
    let event = event_of(row)?;
    if matches!(event, Event::AttemptStarted(_) | Event::AttemptAdopted(_)) {
        page.attempts.remove(&run);
    }
    let mut b = Builder { store, run, row, content, page };
    match event {
        Event::AttemptStarted(a) | Event::AttemptAdopted(a) if a.attempt > 1 => {
            Ok(b.attempt(a.attempt - 1).await?.into_iter().collect())
        }
        Event::Finished(f) => b.run_end(f.state.as_str(), Some(&f.summary)).await,
        Event::Cancelled(c) => b.run_end("cancelled", Some(&c.reason)).await,
        // A step that changed nothing ends at `step.finished`; one with an effect when its
        // effect settles (or cannot be settled).
        Event::StepFinished(s) => Ok(b.tool_call(s.step).await?.into_iter().collect()),
        Event::IntentConfirmed(i) => Ok(b.tool_call(i.step).await?.into_iter().collect()),
        Event::IntentRecovered(i) => Ok(b.tool_call(i.step).await?.into_iter().collect()),
        Event::IntentFailed(i) => Ok(b.tool_call(i.step).await?.into_iter().collect()),
        Event::AlreadyApplied(i) => Ok(b.tool_call(i.step).await?.into_iter().collect()),
        Event::OutcomeUnknown(i) => Ok(b.tool_call(i.step).await?.into_iter().collect()),
        Event::ModelCalled(m) => Ok(vec![b.model_call(&m).await?]),
        Event::Approved(a) => b.review(&a.approval, "approved").await,
        Event::Rejected(r) => b.review(&r.approval, "rejected").await,
        Event::Expired(e) => b.review(&e.approval, "expired").await,
        Event::ClosedWithRun(c) => b.review(&c.approval, "closed with the run").await,
        Event::Superseded(s) => b.review(&s.approval, "superseded").await,
        Event::Refreshed(r) => b.review(&r.approval, "superseded").await,
        Event::GrantUsed(g) => Ok(vec![b.grant(&g.grant, g.step).await?]),
        _ => Ok(Vec::new()),
    }
}

/// A stored event, typed. One that does not read is an error naming it, never skipped.
pub fn event_of(row: &AuditRow) -> Result<Event> {
    serde_json::from_str::<serde_json::Value>(&row.payload)
        .ok()
        .and_then(|payload| Event::decode(&row.kind, &payload))
        .ok_or_else(|| unreadable(row))
}

/// A model step's result as the journal keeps it: the reply is what is exported.
#[derive(serde::Deserialize)]
struct Recorded {
    reply: crate::provider::Completion,
}

/// The harness's own record that does not decode: damage, never skipped.
fn unreadable(row: &AuditRow) -> Error {
    Error::Store(crate::store::StoreError::Damaged {
        table: "audit_events",
        row: format!("seq {}", row.seq),
        detail: format!("its payload is not a {} event", row.kind),
    })
}

struct Builder<'a, 'p> {
    store: &'a Store,
    run: RunId,
    row: &'a AuditRow,
    content: Option<&'a BlobStore>,
    page: &'a mut Page<'p>,
}

impl Builder<'_, '_> {
    fn span(&self, part: Part<'_>, parent: Option<Part<'_>>, name: String, start_ms: i64) -> Span {
        Span {
            trace: ids::trace(self.run),
            id: ids::span(self.run, part),
            parent: parent.map(|p| ids::span(self.run, p)),
            name,
            kind: Kind::Internal,
            start_ms,
            end_ms: self.row.at,
            attributes: vec![("reins.run.id", self.run.to_string().into())],
            events: Vec::new(),
            error: None,
        }
    }

    /// The run's own span and its last attempt's.
    async fn run_end(&mut self, state: &str, summary: Option<&str>) -> Result<Vec<Span>> {
        let run = runs::get(self.store.pool(), self.run).await?;
        // A run's name is often its goal (an LLM run's is): content, not a label.
        let agent = format!("reins {}", run.agent_kind);
        let mut span = self.span(Part::Run, None, format!("invoke_agent {agent}"), run.created_at);
        span.attributes.extend([
            ("gen_ai.operation.name", "invoke_agent".into()),
            ("gen_ai.agent.name", agent.into()),
            ("gen_ai.agent.id", self.run.to_string().into()),
            ("reins.agent.kind", run.agent_kind.clone().into()),
            ("reins.run.state", state.into()),
        ]);
        let (calls, tokens_in, tokens_out, cost) = steps::usage(self.store.pool(), self.run).await?;
        if calls > 0 {
            span.attributes.extend([
                ("gen_ai.usage.input_tokens", tokens_in.into()),
                ("gen_ai.usage.output_tokens", tokens_out.into()),
                ("reins.model_calls", calls.into()),
            ]);
        }
        if let Some(micros) = cost {
            span.attributes.push(("reins.cost_usd", Attr::F64(micros as f64 / 1e6)));
        }
        if self.content.is_some() {
            span.attributes.push(("reins.run.name", redact(&run.name).into_owned().into()));
            span.attributes.push(("reins.run.goal", redact(&run.goal).into_owned().into()));
            if let Some(summary) = summary {
                span.attributes.push(("reins.run.summary", redact(summary).into_owned().into()));
            }
        }
        if state == "failed" {
            span.error = Some(summary.map(|s| redact(s).into_owned()).unwrap_or_default());
        }
        let mut spans = vec![span];
        let last = self.attempts().await?.last().map(|a| a.n);
        if let Some(n) = last {
            spans.extend(self.attempt(n).await?);
        }
        Ok(spans)
    }

    /// The run's agent, as spans name it, read once per page.
    async fn agent(&mut self) -> Result<String> {
        if let Some(a) = self.page.agents.get(&self.run) {
            return Ok(a.clone());
        }
        let run = runs::get(self.store.pool(), self.run).await?;
        let agent = format!("reins {}", run.agent_kind);
        self.page.agents.insert(self.run, agent.clone());
        Ok(agent)
    }

    /// The run's attempts, read once per page.
    async fn attempts(&mut self) -> Result<&[attempts::AttemptRow]> {
        if !self.page.attempts.contains_key(&self.run) {
            let all = attempts::list(self.store.pool(), self.run).await?;
            self.page.attempts.insert(self.run, all);
        }
        Ok(self.page.attempts.get(&self.run).map(Vec::as_slice).unwrap_or_default())
    }

    async fn attempt(&mut self, n: i64) -> Result<Option<Span>> {
        let Some(a) = self.attempts().await?.iter().find(|a| a.n == n).cloned() else {
            return Ok(None);
        };
        let mut span = self.span(Part::Attempt(n), Some(Part::Run), format!("attempt {n}"), a.started_at);
        span.end_ms = a.ended_at.unwrap_or(self.row.at);
        span.attributes.extend([
            ("reins.attempt", n.into()),
            ("reins.worker", a.worker.into()),
        ]);
        if let Some(outcome) = a.outcome {
            span.attributes.push(("reins.attempt.outcome", outcome.into()));
        }
        Ok(Some(span))
    }

    /// The attempt a step started in: the last one to start before it.
    async fn attempt_of(&mut self, started_at: i64) -> Result<i64> {
        Ok(self
            .attempts()
            .await?
            .iter()
            .filter(|a| a.started_at <= started_at)
            .map(|a| a.n)
            .next_back()
            .unwrap_or(1))
    }

    async fn step(&self, seq: i64) -> Result<steps::StepRow> {
        steps::get(self.store.pool(), self.run, seq)
            .await?
            .ok_or_else(|| self.missing_step(seq))
    }

    fn missing_step(&self, seq: i64) -> Error {
        Error::Invalid(format!(
            "audit event {} names step {seq} of run {}, which is not stored",
            self.row.seq, self.run
        ))
    }

    async fn tool_call(&mut self, seq: i64) -> Result<Option<Span>> {
        let Some((step, card)) = telemetry::step_with_card(self.store.pool(), self.run, seq).await? else {
            return Err(self.missing_step(seq));
        };
        if step.kind == StepKind::ModelCall {
            return Ok(None);
        }
        // A reviewed step's row is written again when it is carried out: it began with its card.
        let started_at = card.map_or(step.started_at, |at| at.min(step.started_at));
        let attempt = self.attempt_of(started_at).await?;
        let name = match step.kind {
            StepKind::ToolCall => format!("execute_tool {}", step.tool),
            StepKind::Question => format!("ask_user {}", step.tool),
            _ => format!("step {}", step.tool),
        };
        let mut span = self.span(Part::Step(seq), Some(Part::Attempt(attempt)), name, started_at);
        span.end_ms = step.ended_at.unwrap_or(self.row.at);
        if step.kind == StepKind::ToolCall {
            span.attributes.extend([
                ("gen_ai.operation.name", "execute_tool".into()),
                ("gen_ai.tool.name", step.tool.clone().into()),
                ("gen_ai.tool.call.id", format!("{}/{seq}", self.run).into()),
            ]);
        }
        span.attributes.extend([
            ("reins.step", seq.into()),
            ("reins.step.status", step.status.as_str().into()),
            ("reins.action_hash", step.action_hash.clone().into()),
        ]);
        if let Some(risk) = step.risk {
            span.attributes.push(("reins.risk", risk.as_str().into()));
        }
        if self.content.is_some() {
            let args = step.action.call().args.to_string();
            span.attributes.push(("gen_ai.tool.call.arguments", redact(&args).into_owned().into()));
            if let Some(diff) = step.preview.as_deref().filter(|d| !d.is_empty()) {
                span.attributes.push(("reins.diff", redact(diff).into_owned().into()));
            }
        }
        if matches!(step.status, StepStatus::Failed | StepStatus::Invalid) {
            span.error = Some(step.status.as_str().to_owned());
        }
        span.events = self.contained(seq, step.started_at, &mut span.attributes).await?;
        Ok(Some(span))
    }

    /// What confined the step's process, and each thing it blocked, as events on its span. The
    /// engine writes a step's `step.contained` in the same commit as the event that settles it,
    /// just before it: it is among the page's earlier rows, unless the settling event opens the
    /// page, and then it is read from the log.
    async fn contained(
        &self,
        seq: i64,
        since: i64,
        attrs: &mut Vec<(&'static str, Attr)>,
    ) -> Result<Vec<Happening>> {
        let read;
        let rows: &[AuditRow] = if self.page.earlier.is_empty() {
            let filter = crate::event::Filter {
                run: Some(self.run),
                kind: Some("step.contained".into()),
                since: Some(since),
                ..Default::default()
            };
            read = audit_read::page(self.store.pool(), &filter, Some(0), true, 1000).await?;
            &read
        } else {
            self.page.earlier
        };
        let run = self.run.to_string();
        let mut out = Vec::new();
        for row in rows.iter().filter(|r| {
            r.seq < self.row.seq && r.kind == "step.contained" && r.run_id.as_deref() == Some(&run)
        }) {
            let Event::Contained(c) = event_of(row)? else {
                return Err(unreadable(row));
            };
            if c.step != seq {
                continue;
            }
            attrs.push(("reins.containment", c.enforced.clone().into()));
            out.extend(c.blocked.iter().map(|what| Happening {
                name: "reins.containment.blocked".into(),
                at_ms: row.at,
                attributes: vec![
                    ("reins.blocked", what.clone().into()),
                    ("reins.program", c.program.clone().into()),
                ],
            }));
        }
        Ok(out)
    }

    async fn model_call(&mut self, m: &crate::event::ModelCalled) -> Result<Span> {
        let step = self.step(m.step).await?;
        let attempt = self.attempt_of(step.started_at).await?;
        let mut span = self.span(
            Part::Step(m.step),
            Some(Part::Attempt(attempt)),
            format!("chat {}", m.model),
            step.started_at,
        );
        span.kind = Kind::Client;
        span.end_ms = step.ended_at.unwrap_or(self.row.at);
        let agent = self.agent().await?;
        span.attributes.extend([
            ("gen_ai.operation.name", "chat".into()),
            ("gen_ai.agent.name", agent.into()),
            ("gen_ai.provider.name", "openai".into()),
            ("gen_ai.request.model", m.model.clone().into()),
            ("reins.step", m.step.into()),
        ]);
        let server = step.action.call().args["baseUrl"].as_str().and_then(|u| url::Url::parse(u).ok());
        if let Some(server) = server {
            if let Some(host) = server.host_str() {
                span.attributes.push(("server.address", host.to_owned().into()));
            }
            if let Some(port) = server.port_or_known_default() {
                span.attributes.push(("server.port", i64::from(port).into()));
            }
        }
        if let Some(u) = &m.usage {
            span.attributes.extend([
                ("gen_ai.usage.input_tokens", Attr::Int(i64::try_from(u.prompt_tokens).unwrap_or(i64::MAX))),
                ("gen_ai.usage.output_tokens", Attr::Int(i64::try_from(u.completion_tokens).unwrap_or(i64::MAX))),
            ]);
        }
        if let Some(reason) = &m.finish_reason {
            span.attributes.push(("gen_ai.response.finish_reasons", Attr::Strs(vec![reason.clone()])));
        }
        if let Some(cost) = m.cost_usd {
            span.attributes.push(("reins.cost_usd", Attr::F64(cost)));
        }
        if !m.tool_calls.is_empty() {
            span.attributes.push(("reins.tool_calls", Attr::Strs(m.tool_calls.clone())));
        }
        if let Some(blobs) = self.content {
            let args = &step.action.call().args;
            if let Some(prompt) = args["prompt"].as_str().and_then(Digest::parse) {
                // Kept for export only: one removed since (retention, a crash before it
                // settled) is said on the span, never taken for damage.
                match blobs.get(&prompt).await {
                    Ok(bytes) => {
                        let text = String::from_utf8_lossy(&bytes);
                        span.attributes.push(("gen_ai.input.messages", redact(&text).into_owned().into()));
                    }
                    Err(e) => span.attributes.push(("reins.prompt.unavailable", e.to_string().into())),
                }
            }
            if let Some(result) = &step.result {
                let output = serde_json::from_str::<Recorded>(result)
                    .map(|r| super::messages::output(&r.reply).to_string())
                    .unwrap_or_else(|_| result.clone());
                span.attributes.push(("gen_ai.output.messages", redact(&output).into_owned().into()));
            }
        }
        Ok(span)
    }

    /// A review: from the card opening to its decision, under the step it held.
    async fn review(&self, id: &str, decision: &str) -> Result<Vec<Span>> {
        let Some(a) = approvals::get(self.store.pool(), id).await? else {
            return Err(Error::Invalid(format!(
                "audit event {} names review {id}, which is not stored",
                self.row.seq
            )));
        };
        let mut span = self.span(
            Part::Review(id),
            Some(Part::Step(a.step_seq)),
            format!("review {}", a.tool),
            a.created_at,
        );
        let by = a.decided_by.clone().unwrap_or_default();
        let decision = if decision == "approved" && a.edited_hash.is_some() {
            "approved with an edit"
        } else {
            decision
        };
        let (decider, category) = decider(decision, &by, &self.row.actor);
        span.end_ms = a.decided_at.unwrap_or(self.row.at).max(a.created_at);
        span.attributes.extend([
            ("reins.review.id", id.to_owned().into()),
            ("reins.review.decision", decision.into()),
            ("reins.review.risk", a.risk.as_str().into()),
            ("reins.review.decider", decider.into()),
            ("reins.review.reason_category", category.into()),
            ("reins.review.wait_ms", (span.end_ms - a.created_at).into()),
            ("gen_ai.tool.name", a.tool.clone().into()),
            ("reins.step", a.step_seq.into()),
        ]);
        if self.content.is_some() {
            if let Some(note) = a.note.as_deref().filter(|n| !n.is_empty()) {
                span.attributes.push(("reins.review.reason", redact(note).into_owned().into()));
            }
            // What the person was shown and decided on: the diff or command, as edited.
            let shown = a.edited_preview.as_deref().unwrap_or(&a.preview);
            span.attributes.push(("reins.review.diff", redact(shown).into_owned().into()));
        }
        Ok(vec![span])
    }

    /// A step a standing grant allowed: a review that took no wait, decided by the grant.
    async fn grant(&self, grant: &str, seq: i64) -> Result<Span> {
        let id = format!("grant:{grant}:{seq}");
        let step = self.step(seq).await?;
        let mut span = self.span(
            Part::Review(&id),
            Some(Part::Step(seq)),
            format!("review {}", step.tool),
            self.row.at,
        );
        span.attributes.extend([
            ("reins.review.decision", "approved".into()),
            ("reins.review.decider", "grant".into()),
            ("reins.review.reason_category", "standing grant".into()),
            ("reins.review.grant", grant.to_owned().into()),
            ("reins.review.wait_ms", 0i64.into()),
            ("gen_ai.tool.name", step.tool.clone().into()),
            ("reins.step", seq.into()),
        ]);
        if let Some(risk) = step.risk {
            span.attributes.push(("reins.review.risk", risk.as_str().into()));
        }
        Ok(span)
    }
}

/// Who decided a review (a person at the desktop or CLI, a paired device, a desktop notification,
/// or the harness), and the kind of reason the decision had.
pub fn decider(decision: &str, by: &str, actor: &str) -> (&'static str, &'static str) {
    let who = if by.starts_with("device:") {
        "device"
    } else if crate::event::from_notification(by) {
        "notification"
    } else if by.starts_with("user") || actor == "user" {
        "user"
    } else {
        "harness"
    };
    let category = match decision {
        "expired" => "no decision before the timeout",
        "superseded" => "the action or its files changed",
        "closed with the run" => "the run ended first",
        "approved with an edit" => "a person edited the action",
        "rejected" => "a person rejected it",
        _ => "a person approved it",
    };
    (who, category)
}

#[cfg(test)]
mod tests {
    use super::decider;

    #[test]
    fn the_decider_is_read_from_who_the_log_names() {
        let host = "@h";
        assert_eq!(decider("approved", &format!("user:ann{host} (desktop)"), "user").0, "user");
        assert_eq!(decider("approved", "device:my phone@h (web)", "user").0, "device");
        assert_eq!(
            decider("rejected", "user:ann@h (desktop, from the notification)", "user"),
            ("notification", "a person rejected it")
        );
        assert_eq!(decider("expired", "", "harness"), ("harness", "no decision before the timeout"));
    }
}
