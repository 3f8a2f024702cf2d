//! The step protocol (DESIGN §3) for one proposed call: validate → classify → preview → durable
//! intent → effect → confirm, plus the paths off it: reuse from the journal, review, failure, and an
//! outcome nobody can know.

use std::net::IpAddr;

use crate::agent::Observation;
use crate::approval::preview;
use crate::audit::event as ev;
use crate::checkpoint::{Level, ToolRecord};
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::Result;
use crate::ids::IntentId;
use crate::journal::IntentStatus;
use crate::policy::shell::Place;
use crate::policy::{Context, Decision, Verdict};
use crate::step::{StepKind, StepStatus};
use crate::store::{audit, audit::Actor, intents, steps, StoreError};
use crate::tools::{self, Action, ToolCall};

use super::drive::Drive;
use super::{DriveOutcome, Progress};

/// One step's record, before it is written.
pub(super) struct StepRecord<'s> {
    pub(super) seq: i64,
    pub(super) tool: &'s str,
    pub(super) action: &'s str,
    pub(super) action_hash: &'s str,
    pub(super) why: Option<&'s str>,
    pub(super) verdict: Option<&'s Verdict>,
    pub(super) preview: Option<&'s str>,
    /// The step was parked for review: its row is replaced by what happens now.
    pub(super) reopen: bool,
    /// The approval this step carries out.
    pub(super) approval: Option<&'s str>,
}

impl Drive<'_> {
    /// Where commands run and which paths are protected, for the shell classifier and grants.
    pub(super) fn place(&self) -> Place<'_> {
        Place {
            root: self.ws.root(),
            protected: self.e.policy.protected(),
        }
    }

    /// Steps 1–9 for one proposed call. `Some(outcome)` when the drive must stop.
    pub(super) async fn step(
        &mut self,
        call: ToolCall,
        why: Option<String>,
    ) -> Result<Option<DriveOutcome>> {
        let seq = self.cp.next_step;
        let parsed = Action::parse(&call, &self.ws);
        let (action_text, action_hash) = match &parsed {
            Ok(a) => (a.canonical_text(), a.hash()),
            Err(_) => {
                let raw = tools::canonical_of_raw(&call);
                let hash = Digest::of(raw.as_bytes());
                (raw, hash)
            }
        };

        // Resuming from an earlier checkpoint: this step may already be in the journal.
        if seq <= self.journal_through {
            if let Some(prev) = steps::get(self.e.store.pool(), self.run, seq).await? {
                return self.reuse(prev, &call, action_hash.as_str()).await;
            }
        }

        // 1. Validate
        let action = match parsed {
            Ok(a) => a,
            Err(err) => {
                let rec = StepRecord {
                    seq,
                    tool: &call.tool,
                    action: &action_text,
                    action_hash: action_hash.as_str(),
                    why: why.as_deref(),
                    verdict: None,
                    preview: None,
                    reopen: false,
                    approval: None,
                };
                return self
                    .record(&rec, StepStatus::Invalid, false, &err.to_string())
                    .await
                    .map(|_| None);
            }
        };
        self.proceed(seq, why.as_deref(), &action, false).await
    }

    /// Steps 2–9 for a valid action: classify, preview, then deny, review, or run it.
    pub(super) async fn proceed(
        &mut self,
        seq: i64,
        why: Option<&str>,
        action: &Action,
        reopen: bool,
    ) -> Result<Option<DriveOutcome>> {
        let action_text = action.canonical_text();
        let action_hash = action.hash();
        let mut rec = StepRecord {
            seq,
            tool: action.tool(),
            action: &action_text,
            action_hash: action_hash.as_str(),
            why,
            verdict: None,
            preview: None,
            reopen,
            approval: None,
        };
        // 2. Classify (a request's host is resolved first: the policy judges the addresses).
        let resolved = match tools::fetch::addresses_of(action).await {
            Ok(r) => r,
            Err(e) => {
                return self
                    .record(&rec, StepStatus::Failed, false, &e)
                    .await
                    .map(|_| None)
            }
        };
        let verdict = self.classify(action, &resolved);
        rec.verdict = Some(&verdict);
        // 3. Preview
        let plan = match tools::plan_files(action, &self.ws).map_err(|e| e.to_string()) {
            Ok(p) => p,
            Err(err) => {
                return self
                    .record(&rec, StepStatus::Failed, false, &err)
                    .await
                    .map(|_| None)
            }
        };
        let preview = preview::of(action, plan.as_ref(), &verdict, &resolved, self.place());
        rec.preview = Some(&preview);
        match verdict.decision {
            Decision::Deny => {
                return self
                    .record(&rec, StepStatus::Denied, false, &denied(&verdict))
                    .await
                    .map(|_| None)
            }
            Decision::Ask => match self.grant_for(action, verdict.risk).await? {
                Some(grant) => self.use_grant(&grant, seq, action_hash.as_str()).await?,
                None => return self.park(&rec, plan.as_ref(), None).await.map(Some),
            },
            Decision::Allow => {}
        }
        self.execute(&rec, action, plan, &resolved).await
    }

    pub(super) fn classify(&self, action: &Action, resolved: &[IpAddr]) -> Verdict {
        let cx = Context {
            root: self.ws.root(),
            resolved,
        };
        self.e.policy.classify(action, &cx)
    }

    /// Nobody can say whether an effect happened: the intent and its step are marked unknown, and
    /// the run waits for a human. Never guessed, never re-run.
    pub(super) async fn outcome_unknown(
        &mut self,
        intent: IntentId,
        seq: i64,
        tool: &str,
        why: &str,
    ) -> Result<DriveOutcome> {
        let now = now_ms();
        let mut tx = self.begin().await?;
        intents::settle_with_step(
            &mut tx,
            self.run,
            seq,
            IntentStatus::Unknown,
            StepStatus::Unknown,
            why,
            Some(why),
            now,
        )
        .await?;
        let event = audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::OutcomeUnknown {
                intent: intent.to_string(),
                step: seq,
                tool: tool.into(),
                why: why.into(),
            },
        );
        audit::append_all(&mut tx, Some(self.owner()), &[event], now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        self.suspend(&format!(
            "step {seq} ({tool}): outcome unknown: {why}. Decide with `reins resolve {intent} --done | --retry | --skip`"
        ))
        .await
    }

    pub(super) fn complete(
        &mut self,
        seq: i64,
        tool: &str,
        action_hash: &str,
        status: StepStatus,
        result: &str,
        summary: &str,
    ) {
        self.cp.completed.push(ToolRecord {
            seq,
            tool: tool.into(),
            action_hash: action_hash.into(),
            status: status.as_str().into(),
            result_sha256: Digest::of(result.as_bytes()),
            summary: one_line(summary),
        });
        // The journal holds every step; a checkpoint keeps only the recent ones, so its size and the
        // time to verify it do not grow with the run.
        let excess = self
            .cp
            .completed
            .len()
            .saturating_sub(crate::checkpoint::RECENT_STEPS);
        self.cp.completed.drain(..excess);
        self.cp.next_step = seq + 1;
        self.cp.current_step = None;
    }

    /// Records a step that ran no effect (read-only, invalid, denied, or failed before its intent),
    /// with its checkpoint, in one transaction.
    pub(super) async fn record(
        &mut self,
        rec: &StepRecord<'_>,
        status: StepStatus,
        ok: bool,
        result: &str,
    ) -> Result<()> {
        self.record_with_summary(rec, status, ok, result, result)
            .await
    }

    pub(super) async fn record_with_summary(
        &mut self,
        rec: &StepRecord<'_>,
        status: StepStatus,
        ok: bool,
        result: &str,
        summary: &str,
    ) -> Result<()> {
        self.observe(rec.seq, rec.tool, ok, result)?;
        self.complete(rec.seq, rec.tool, rec.action_hash, status, result, summary);
        self.stamp(format!("step {} {} {status}", rec.seq, rec.tool));
        let prepared = self.e.prepare(&self.cp, Level::Step)?;
        let now = now_ms();
        let mut tx = self.begin().await?;
        if rec.reopen {
            steps::reopen(&mut tx, self.run, rec.seq).await?;
        }
        steps::insert(&mut tx, self.run, &step_row(rec, status, Some(result), now)).await?;
        let mut events: Vec<audit::Event> = self.decided(rec).into_iter().collect();
        events.push(audit::Event::new(
            Actor::Agent,
            Some(self.run),
            ev::StepFinished {
                step: rec.seq,
                tool: rec.tool.into(),
                status,
                action_hash: rec.action_hash.into(),
                verdict: rec.verdict.cloned(),
                approval: rec.approval.map(str::to_owned),
            },
        ));
        let cp_seq = self
            .e
            .insert_checkpoint(
                &mut tx,
                self.run,
                &prepared,
                now,
                events,
                Some(self.owner()),
            )
            .await?;
        tx.commit().await.map_err(StoreError::from)?;
        self.obs.on(&Progress::Step {
            seq: rec.seq,
            tool: rec.tool.into(),
            status,
            why: rec.why.map(str::to_owned),
            summary: one_line(summary),
            checkpoint: cp_seq,
            reused: false,
        });
        Ok(())
    }
}

impl Drive<'_> {
    /// Tells the agent what a step returned. A large output is first stored whole in the blob store
    /// (fsynced, content-addressed) so the agent can refer to it instead of carrying it.
    pub(super) fn observe(&mut self, seq: i64, tool: &str, ok: bool, output: &str) -> Result<()> {
        let artifact = if output.len() > crate::agent::ARTIFACT_BYTES {
            Some(self.e.blobs.put(output.as_bytes())?)
        } else {
            None
        };
        self.agent.observe(&Observation {
            seq,
            tool: tool.into(),
            ok,
            output: output.into(),
            artifact,
        });
        Ok(())
    }

    /// The policy's decision on a step, for the audit log, when the step got that far.
    pub(super) fn decided(&self, rec: &StepRecord<'_>) -> Option<audit::Event> {
        rec.verdict.map(|v| {
            audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::PolicyDecided {
                    step: rec.seq,
                    tool: rec.tool.into(),
                    action_hash: rec.action_hash.into(),
                    risk: v.risk,
                    decision: v.decision,
                    reasons: v.reasons.clone(),
                    policy: self.e.policy.version(),
                },
            )
        })
    }
}

/// The first line, at most 200 characters.
pub(super) fn one_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

pub(super) fn denied(verdict: &Verdict) -> String {
    format!("denied by policy: {}", verdict.reasons.join("; "))
}

pub(super) fn step_row(
    rec: &StepRecord<'_>,
    status: StepStatus,
    result: Option<&str>,
    now: i64,
) -> steps::StepRow {
    steps::StepRow {
        seq: rec.seq,
        kind: StepKind::ToolCall,
        tool: rec.tool.into(),
        action: rec.action.into(),
        action_hash: rec.action_hash.into(),
        why: rec.why.map(str::to_owned),
        status,
        risk: rec.verdict.map(|v| v.risk),
        reasons: rec.verdict.map(|v| v.reasons.clone()),
        preview: rec.preview.map(str::to_owned),
        result: result.map(str::to_owned),
        started_at: now,
        ended_at: result.map(|_| now),
    }
}
