//! `ask_user`: the agent asks the person something. The question is a step; the run waits in
//! `awaiting_input` (a safe point: no worker holds it) until `reins answer RUN TEXT` records the
//! answer as the step's result; the next worker hands it to the agent as the call's result.

use crate::audit::event as ev;
use crate::checkpoint::Level;
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::Result;
use crate::run::{RunEvent, RunState};
use crate::step::{StepKind, StepStatus};
use crate::store::{attempts, audit, audit::Actor, runs, steps, StoreError, Tx};

use super::drive::Drive;
use super::step::one_line;
use super::{DriveOutcome, Progress};

pub(super) const TOOL: &str = "ask_user";

/// Longest question and answer kept.
pub const MAX_TEXT: usize = 20_000;

impl Drive<'_> {
    pub(super) async fn ask(&mut self, question: String) -> Result<Option<DriveOutcome>> {
        let seq = self.cp.next_step;
        if seq <= self.journal_through {
            if let Some(prev) = steps::get(self.e.store.pool(), self.run, seq).await? {
                if prev.kind == StepKind::Question {
                    return self.continue_question(prev).await;
                }
                return self
                    .suspend(&format!(
                        "step {seq}: the journal holds {} here, but the resumed agent asks a question; the run diverged from its record",
                        prev.tool
                    ))
                    .await
                    .map(Some);
            }
        }
        let question: String = question.chars().take(MAX_TEXT).collect();
        let action =
            serde_json::json!({ "tool": TOOL, "args": { "question": question } }).to_string();
        let hash = Digest::of(action.as_bytes());
        self.cp.current_step = Some(seq);
        self.stamp(format!("step {seq} asks the user"));
        let prepared = self.e.prepare(&self.cp, Level::Review)?;
        let now = now_ms();
        let mut tx = self.begin().await?;
        steps::insert(
            &mut tx,
            self.run,
            &steps::StepRow {
                seq,
                kind: StepKind::Question,
                tool: TOOL.into(),
                action,
                action_hash: hash.as_str().into(),
                why: None,
                status: StepStatus::AwaitingInput,
                risk: None,
                reasons: None,
                preview: None,
                result: None,
                started_at: now,
                ended_at: None,
            },
        )
        .await?;
        let event = audit::Event::new(
            Actor::Agent,
            Some(self.run),
            ev::QuestionAsked {
                step: seq,
                question: question.clone(),
            },
        );
        self.e
            .insert_checkpoint(
                &mut tx,
                self.run,
                &prepared,
                now,
                vec![event],
                Some(self.owner()),
            )
            .await?;
        let reason = format!(
            "the agent asks: {question} — answer with `reins answer {} \"…\"`",
            self.run
        );
        self.wait_for_answer(tx, reason).await
    }

    /// Moves the run to `awaiting_input` with what `tx` already holds, commits, and reports it.
    async fn wait_for_answer(
        &mut self,
        mut tx: Tx,
        reason: String,
    ) -> Result<Option<DriveOutcome>> {
        let now = now_ms();
        let (_, to, _) = runs::advance(
            &mut tx,
            self.run,
            Some(self.fence),
            RunEvent::AwaitInput,
            Some(&reason),
            now,
        )
        .await?;
        attempts::end_open(&mut tx, self.run, "awaiting input", now).await?;
        tx.commit().await.map_err(StoreError::from)?;
        self.obs.on(&Progress::Waiting {
            state: to,
            reason: reason.clone(),
        });
        Ok(Some(DriveOutcome::NeedsHuman { state: to, reason }))
    }

    /// The run was waiting on a question: hand the answer over, or wait again.
    pub(super) async fn continue_question(
        &mut self,
        step: steps::StepRow,
    ) -> Result<Option<DriveOutcome>> {
        if step.status != StepStatus::Answered {
            // Resumed (say, after a pause) before anyone answered: back to waiting.
            let now = now_ms();
            let mut tx = self.begin().await?;
            audit::append(
                &mut tx,
                audit::Event::new(
                    Actor::Harness,
                    Some(self.run),
                    ev::RunStateChanged {
                        from: None,
                        to: RunState::AwaitingInput,
                        step: Some(step.seq),
                    },
                ),
                now,
            )
            .await?;
            let reason = format!(
                "still waiting for an answer to step {}; `reins answer {} \"…\"`",
                step.seq, self.run
            );
            return self.wait_for_answer(tx, reason).await;
        }
        let answer = step.result.clone().unwrap_or_default();
        self.observe(step.seq, TOOL, true, &answer)?;
        self.complete(
            step.seq,
            TOOL,
            &step.action_hash,
            StepStatus::Answered,
            &answer,
            &answer,
        );
        let cp = self
            .write_checkpoint(Level::Step, format!("step {} answered", step.seq))
            .await?;
        self.obs.on(&Progress::Step {
            seq: step.seq,
            tool: TOOL.into(),
            status: StepStatus::Answered,
            why: None,
            summary: one_line(&answer),
            checkpoint: cp,
            reused: false,
        });
        Ok(None)
    }
}
