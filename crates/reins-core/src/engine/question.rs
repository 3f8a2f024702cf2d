//! `ask_user`: the agent asks the person something. The question is a step; the run waits in
//! `awaiting_input` (a safe point: no worker holds it) until the person's answer is recorded as the
//! step's result (`Engine::answer`); the next worker hands it to the agent as the call's result.

use crate::event::{self as ev, Actor};
use crate::checkpoint::Level;
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::run::{RunEvent, RunState};
use crate::step::{one_line, StepKind, StepStatus};
use crate::store::write::{Transition, Write};
use crate::store::{audit, runs, steps};
use crate::action::{RecordedCall, ToolCall};

use super::commit::{Change, Report};
use super::drive::{Drive, Stop};
use super::{DriveOutcome, Engine, Silent};

pub(super) const TOOL: &str = "ask_user";

/// Longest question and answer kept.
pub const MAX_TEXT: usize = 20_000;

fn awaiting_input(reason: String) -> Stop {
    Stop {
        transition: Transition::Moves(vec![RunEvent::AwaitInput], Some(reason.clone())),
        state: RunState::AwaitingInput,
        message: reason,
        attempt: "awaiting input".into(),
    }
}

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
        let action = RecordedCall::raw(ToolCall {
            tool: TOOL.into(),
            args: serde_json::json!({ "question": question }),
        });
        let hash = Digest::of(action.text().as_bytes());
        self.cp.current_step = Some(seq);
        let checkpoint = self.checkpoint(Level::Review, format!("step {seq} asks the user"))?;
        let now = now_ms();
        let change = Change::rows(vec![Write::Step(Box::new(steps::StepRow {
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
        }))])
        .checkpoint(checkpoint)
        .event(audit::Event::new(
            Actor::Agent,
            Some(self.run),
            ev::QuestionAsked {
                step: seq,
                question: question.clone(),
            },
        ));
        let reason = format!(
            "the agent asks: {question} — answer with `reins answer {} \"…\"`",
            self.run
        );
        self.stop(change, awaiting_input(reason)).await.map(Some)
    }

    /// The run was waiting on a question: hand the answer over, or wait again.
    pub(super) async fn continue_question(
        &mut self,
        step: steps::StepRow,
    ) -> Result<Option<DriveOutcome>> {
        if step.status != StepStatus::Answered {
            // Resumed (say, after a pause) before anyone answered: back to waiting.
            let change = Change::default().event(audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::RunStateChanged {
                    from: None,
                    to: RunState::AwaitingInput,
                    step: Some(step.seq),
                },
            ));
            let reason = format!(
                "still waiting for an answer to step {}; `reins answer {} \"…\"`",
                step.seq, self.run
            );
            return self.stop(change, awaiting_input(reason)).await.map(Some);
        }
        let answer = self
            .e
            .opened_text(
                step.result.as_deref().unwrap_or(""),
                &format!("the answer to step {}", step.seq),
            )
            .await?;
        self.observe(step.seq, TOOL, true, &answer, None).await?;
        self.complete(
            step.seq,
            TOOL,
            &step.action_hash,
            StepStatus::Answered,
            &answer,
            &answer,
        );
        let checkpoint = self.checkpoint(Level::Step, format!("step {} answered", step.seq))?;
        let change = Change::default()
            .checkpoint(checkpoint)
            .report(Report::Step {
                seq: step.seq,
                tool: TOOL.into(),
                status: StepStatus::Answered,
                why: None,
                summary: one_line(&answer),
                reused: false,
            });
        self.commit(change).await?;
        Ok(None)
    }
}

impl Engine {
    /// Answers the question a run waits on; the run is queued to go on with it. Returns the
    /// question's step.
    pub async fn answer(&self, id: RunId, text: &str) -> Result<i64> {
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::Invalid("the answer must not be empty".into()));
        }
        if text.chars().count() > MAX_TEXT {
            return Err(Error::Invalid(format!(
                "the answer is over {MAX_TEXT} characters"
            )));
        }
        let row = runs::get(self.store.pool(), id).await?;
        if row.state != RunState::AwaitingInput {
            return Err(Error::Conflict(format!(
                "run {id} is {}; it is not waiting for an answer",
                row.state
            )));
        }
        let Some((seq, _)) = steps::open_question(self.store.pool(), id).await? else {
            return Err(Error::Conflict(format!(
                "run {id} waits for input but has no open question"
            )));
        };
        // The move re-checks the state inside the change: an answer lands once.
        let change = Change::rows(vec![Write::Answer {
            seq,
            text: text.into(),
        }])
        .event(audit::Event::new(
            Actor::User,
            Some(id),
            ev::QuestionAnswered {
                step: seq,
                answer: text.into(),
            },
        ))
        .moving(Transition::Moves(vec![RunEvent::Answer], None));
        self.commit(Some(id), change, None, &Silent).await?;
        Ok(seq)
    }

    /// The question a run waits on, if it waits on one: (step, question).
    pub async fn question(&self, id: RunId) -> Result<Option<(i64, String)>> {
        let q = steps::open_question(self.store.pool(), id).await?;
        Ok(q.map(|(seq, action)| {
            let text = action.call().args["question"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (seq, text)
        }))
    }
}
