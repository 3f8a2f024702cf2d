//! Where the engine meets [`crate::seal`]: every row a change writes has the secrets of its
//! actions, results, answers and plan sealed before the transaction begins (the keyring is never
//! called with the write lock held), and what runs or goes back to the agent is opened here.

use std::borrow::Cow;

use crate::error::Result;
use crate::store::write::Write;
use crate::action::RecordedCall;

use super::Engine;

/// Text for people only, with any secret in it replaced by its redaction marker.
fn redact(text: &mut String) {
    if let Cow::Owned(r) = crate::secrets::redact(text) {
        *text = r;
    }
}

impl Engine {
    /// `rows` with every secret they would store sealed.
    pub(super) async fn sealed(&self, mut rows: Vec<Write>) -> Result<Vec<Write>> {
        for row in &mut rows {
            match row {
                Write::RunInsert { spec, .. } => self.seal_text(spec, "the plan").await?,
                Write::Step(step) => self.seal_step(step).await?,
                Write::Intent { step, intent, .. } => {
                    // The intent records the step's own action: scanned once, sealed once.
                    let same = intent.action.text() == step.action.text();
                    self.seal_step(step).await?;
                    intent.action = if same {
                        step.action.clone()
                    } else {
                        let what = format!("step {}'s action", intent.step_seq);
                        self.seal_call(&intent.action, &what).await?
                    };
                    self.seal_opt(&mut intent.result, "an effect's result").await?;
                }
                Write::Settle { seq, result, .. } | Write::SettleByPerson { seq, result, .. } => {
                    self.seal_text(result, &format!("step {seq}'s result")).await?;
                }
                Write::Request { body, .. } => self.seal_text(body, "a request from outside").await?,
                Write::Answer { seq, text } => {
                    self.seal_text(text, &format!("the answer to step {seq}")).await?;
                }
                Write::Approval(a) => {
                    // The context summary is for the reviewer: secrets in it are redacted.
                    let c = &mut a.context;
                    redact(&mut c.goal);
                    c.why.iter_mut().for_each(redact);
                    [&mut c.recent, &mut c.pending, &mut c.constraints, &mut c.read]
                        .into_iter()
                        .flatten()
                        .for_each(redact);
                    let what = format!("step {}'s action", a.step_seq);
                    a.action = self.seal_call(&a.action, &what).await?;
                    if let Some(edited) = &a.edited_action {
                        a.edited_action = Some(self.seal_call(edited, &what).await?);
                    }
                }
                Write::ApprovalDecided { edited, note, .. } => {
                    // A reviewer's note is for people (and a rejection's, for the agent): a
                    // secret typed into one is not kept.
                    note.iter_mut().for_each(redact);
                    if let Some(edit) = edited {
                        edit.action = self.seal_call(&edit.action, "the edited action").await?;
                    }
                }
                // Why a retry happened is for people; an error may quote what failed.
                Write::Retry { error, .. } => redact(error),
                Write::History { from, entries } => {
                    for (k, entry) in entries.iter_mut().enumerate() {
                        let what = format!("entry {} of the agent's history", *from + k as i64);
                        self.seal_text(entry, &what).await?;
                    }
                }
                _ => {}
            }
        }
        Ok(rows)
    }

    async fn seal_step(&self, step: &mut crate::store::steps::StepRow) -> Result<()> {
        let what = format!("step {}'s action", step.seq);
        step.action = self.seal_call(&step.action, &what).await?;
        let what = format!("step {}'s result", step.seq);
        self.seal_opt(&mut step.result, &what).await
    }

    async fn seal_opt(&self, text: &mut Option<String>, what: &str) -> Result<()> {
        match text {
            Some(t) => self.seal_text(t, what).await,
            None => Ok(()),
        }
    }

    async fn seal_text(&self, text: &mut String, what: &str) -> Result<()> {
        if let Cow::Owned(s) = self.sealer.seal(text, what).await? {
            *text = s;
        }
        Ok(())
    }

    async fn seal_call(&self, call: &RecordedCall, what: &str) -> Result<RecordedCall> {
        match self.sealer.seal(call.text(), what).await? {
            Cow::Borrowed(_) => Ok(call.clone()),
            Cow::Owned(sealed) => RecordedCall::parse(&sealed).map_err(|e| {
                crate::Error::Invalid(format!("{what} does not read back once sealed: {e}"))
            }),
        }
    }

    /// A recorded call as it runs: its sealed secrets opened.
    pub(super) async fn opened(&self, call: &RecordedCall, what: &str) -> Result<RecordedCall> {
        match self.sealer.open(call.text(), what).await? {
            Cow::Borrowed(_) => Ok(call.clone()),
            Cow::Owned(text) => RecordedCall::parse(&text).map_err(|e| {
                crate::Error::Invalid(format!("{what} does not read back once opened: {e}"))
            }),
        }
    }

    /// A recorded call with its sealed secrets opened, for a person who asked to see it whole.
    pub(crate) async fn reveal(&self, call: &RecordedCall, what: &str) -> Result<RecordedCall> {
        self.opened(call, what).await
    }

    /// Stored text with its sealed secrets opened: whether this keyring's key still opens them.
    pub(crate) async fn reveal_text(&self, text: &str) -> Result<()> {
        self.sealer.open(text, "a sealed row").await?;
        Ok(())
    }

    /// A call given from outside (a person's edit) with any sealed secret it kept opened.
    pub(super) async fn opened_call(
        &self,
        call: crate::action::ToolCall,
        what: &str,
    ) -> Result<crate::action::ToolCall> {
        let text = serde_json::to_string(&call)
            .map_err(|e| crate::Error::Invalid(format!("{what}: {e}")))?;
        match self.sealer.open(&text, what).await? {
            Cow::Borrowed(_) => Ok(call),
            Cow::Owned(opened) => serde_json::from_str(&opened)
                .map_err(|e| crate::Error::Invalid(format!("{what}: {e}"))),
        }
    }

    /// A JSON value (an agent's state) with the secrets in its strings sealed.
    pub(super) async fn sealed_value(
        &self,
        value: &serde_json::Value,
        what: &str,
    ) -> Result<serde_json::Value> {
        self.map_value(value, what, true).await
    }

    /// A JSON value read back from a checkpoint with its sealed secrets opened.
    pub(super) async fn opened_value(
        &self,
        value: &serde_json::Value,
        what: &str,
    ) -> Result<serde_json::Value> {
        self.map_value(value, what, false).await
    }

    async fn map_value(
        &self,
        value: &serde_json::Value,
        what: &str,
        seal: bool,
    ) -> Result<serde_json::Value> {
        let text = serde_json::to_string(value)
            .map_err(|e| crate::Error::Invalid(format!("{what}: {e}")))?;
        let mapped = if seal {
            self.sealer.seal(&text, what).await?
        } else {
            self.sealer.open(&text, what).await?
        };
        match mapped {
            Cow::Borrowed(_) => Ok(value.clone()),
            Cow::Owned(t) => serde_json::from_str(&t)
                .map_err(|e| crate::Error::Invalid(format!("{what}: {e}"))),
        }
    }

    /// Stored text (a result, an answer, a plan) as the agent is given it.
    pub(super) async fn opened_text(&self, text: &str, what: &str) -> Result<String> {
        Ok(self.sealer.open(text, what).await?.into_owned())
    }
}
