//! Steps 7–9 of the protocol for an allowed, approved or granted action: the durable intent with its
//! pre-images, the effect (a file change, a command, a request), and the confirmation — or the
//! failure the disk proves harmless, or an outcome nobody can know.

use std::net::IpAddr;

use crate::audit::event as ev;
use crate::checkpoint::Level;
use crate::clock::now_ms;
use crate::digest::Digest;
use crate::error::Result;
use crate::fault_point;
use crate::ids::IntentId;
use crate::journal::{EffectClass, FileImage, IntentStatus, Settlement};
use crate::step::StepStatus;
use crate::store::{audit, audit::Actor, intents, steps, StoreError};
use crate::tools::shell::ShellOutcome;
use crate::tools::{self, Action, EffectPlan, ShellCommand};

use super::drive::Drive;
use super::step::{one_line, step_row, StepRecord};
use super::{DriveOutcome, Progress};

/// An effect whose intent is being settled.
pub(super) struct EffectRecord<'s> {
    intent: IntentId,
    seq: i64,
    tool: &'s str,
    action_hash: &'s str,
    why: Option<&'s str>,
    post: &'s [FileImage],
}

impl Drive<'_> {
    /// Steps 7–9: run an allowed (or approved, or granted) action and record what happened.
    pub(super) async fn execute(
        &mut self,
        rec: &StepRecord<'_>,
        action: &Action,
        plan: Option<EffectPlan>,
        resolved: &[IpAddr],
    ) -> Result<Option<DriveOutcome>> {
        let seq = rec.seq;
        let action_hash = rec.action_hash;
        if action.effect_class() == EffectClass::Pure {
            let (status, ok, out, summary) = match tools::run_pure(action, &self.ws) {
                Ok(out) => {
                    let summary = tools::describe(action, &out);
                    (StepStatus::Done, true, out, summary)
                }
                Err(err) => (StepStatus::Failed, false, err.to_string(), err.to_string()),
            };
            return self
                .record_with_summary(rec, status, ok, &out, &summary)
                .await
                .map(|_| None);
        }
        let (pre, post, pre_bytes, summary) = match &plan {
            Some(p) => (
                p.pre.clone(),
                p.post.clone(),
                p.pre_bytes.as_slice(),
                Some(p.summary.clone()),
            ),
            None => (Vec::new(), Vec::new(), &[][..], None),
        };
        // 7. Intent, durably, with the pre-images it needs (in the same transaction).
        fault_point!("before_intent");
        if let Some(source) = crate::fault::error_at("intent_write") {
            return Err(crate::error::Error::Io {
                context: format!("writing the intent of step {seq}"),
                source,
            });
        }
        let small_pre_images = self.e.stage_blobs(pre_bytes)?;
        let intent = IntentId::new();
        let now = now_ms();
        let mut tx = self.begin().await?;
        if rec.reopen {
            steps::reopen(&mut tx, self.run, seq).await?;
        }
        let step = step_row(rec, StepStatus::Running, None, now);
        intents::insert_with_step(
            &mut tx,
            self.run,
            &step,
            &intents::IntentRow {
                id: intent.to_string(),
                step_seq: seq,
                tool: action.tool().into(),
                action: rec.action.to_owned(),
                action_hash: action_hash.to_owned(),
                effect_class: action.effect_class(),
                status: IntentStatus::Pending,
                pre_images: pre.clone(),
                post_images: post.clone(),
                // What the agent will be told once confirmed; a restart that settles it tells the same.
                result: summary.clone(),
                settled_by: None,
                fence: self.fence,
                created_at: now,
                settled_at: None,
            },
            &small_pre_images,
        )
        .await?;
        let decided = self.decided(rec);
        audit::append_all(
            &mut tx,
            Some(self.owner()),
            &[
                decided.into_iter().collect::<Vec<_>>(),
                vec![audit::Event::new(
                    Actor::Agent,
                    Some(self.run),
                    ev::IntentPending {
                        intent: intent.to_string(),
                        step: seq,
                        tool: action.tool().into(),
                        action_hash: action_hash.into(),
                        effect_class: action.effect_class(),
                        pre: pre.clone(),
                        post: post.clone(),
                        preview_sha256: rec.preview.map(|p| Digest::of(p.as_bytes())),
                        approval: rec.approval.map(str::to_owned),
                        verdict: rec.verdict.cloned(),
                    },
                )],
            ]
            .concat(),
            now,
        )
        .await?;
        tx.commit().await.map_err(StoreError::from)?;
        // An ambiguous commit: it succeeded, but the caller is told it failed.
        if let Some(source) = crate::fault::error_at("intent_commit") {
            return Err(crate::error::Error::Io {
                context: format!("committing the intent of step {seq}"),
                source,
            });
        }
        fault_point!("after_intent");
        crate::fault::delay().await;

        // 8. Execute, unless the run may have been taken over meanwhile: then the intent stays
        // pending and whoever owns the run settles it (the disk says whether it happened).
        if !self.may_run_effect() {
            return Ok(Some(DriveOutcome::Lost {
                reason: format!(
                    "step {seq}: the lease ran short before the effect; not running it"
                ),
            }));
        }
        let record = |post: &'static [FileImage]| EffectRecord {
            intent,
            seq,
            tool: action.tool(),
            action_hash: rec.action_hash,
            why: rec.why,
            post,
        };
        match (action, &plan) {
            (_, Some(plan)) => {
                if let Err(err) = tools::apply(plan, &self.ws) {
                    return self
                        .effect_failed(
                            intent,
                            seq,
                            action.tool(),
                            rec.action_hash,
                            plan,
                            &err.to_string(),
                        )
                        .await;
                }
                fault_point!("after_effect");
                // 9. Confirm
                let done = EffectRecord {
                    intent,
                    seq,
                    tool: action.tool(),
                    action_hash: rec.action_hash,
                    why: rec.why,
                    post: &plan.post,
                };
                self.settle_effect(done, Ok(&plan.summary)).await?;
            }
            (Action::Shell(cmd), None) => {
                let outcome = self.run_shell(seq, cmd).await;
                fault_point!("after_effect");
                match outcome {
                    Ok(o) if o.ok() => self.settle_effect(record(&[]), Ok(&o.report())).await?,
                    Ok(o) => self.settle_effect(record(&[]), Err(&o.report())).await?,
                    Err(e) => self.settle_effect(record(&[]), Err(&e)).await?,
                }
            }
            (Action::Fetch(req), None) => {
                let outcome = tools::fetch::send(req, resolved).await;
                fault_point!("after_effect");
                match outcome {
                    Ok(text) => self.settle_effect(record(&[]), Ok(&text)).await?,
                    Err(e) => self.settle_effect(record(&[]), Err(&e)).await?,
                }
            }
            (Action::Remember(r), None) => {
                let outcome = self.remember(seq, r, rec.why).await;
                fault_point!("after_effect");
                match outcome {
                    Ok(text) => self.settle_effect(record(&[]), Ok(&text)).await?,
                    Err(e) => self.settle_effect(record(&[]), Err(&e)).await?,
                }
            }
            _ => {
                self.settle_effect(record(&[]), Err("this action has no effect to run"))
                    .await?
            }
        }
        fault_point!("after_confirm");
        Ok(None)
    }

    /// Runs a command in its own process group, recorded so a later attempt can end it; if the run
    /// is lost meanwhile (cancelled, taken over), the group is ended at once.
    pub(super) async fn run_shell(
        &mut self,
        seq: i64,
        cmd: &ShellCommand,
    ) -> std::result::Result<ShellOutcome, String> {
        let analysis = cmd.analyse(self.place());
        let argv = cmd.argv(&analysis);
        let root = self.ws.root().to_owned();
        let timeout = std::time::Duration::from_secs(cmd.timeout_s);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut handle = tokio::task::spawn_blocking(move || {
            tools::shell::run(&argv, &root, timeout, move |pid| {
                let _ = tx.send(pid);
            })
        });
        let pid = rx.await.ok();
        if let Some(pid) = pid {
            if let Err(e) = self.e.track_pid(self.run, seq, pid, &cmd.display()).await {
                tracing::warn!("could not record process {pid} of step {seq}: {e}");
            }
        }
        let leader_start = pid.and_then(crate::process::start_time).unwrap_or(0);
        loop {
            tokio::select! {
                joined = &mut handle => {
                    return match joined {
                        Ok(Ok(outcome)) => Ok(outcome),
                        Ok(Err(e)) => Err(format!("could not start the command: {e}")),
                        Err(e) => Err(format!("the command's runner failed: {e}")),
                    };
                }
                _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {
                    if self.heartbeat_lost() {
                        if let Some(pid) = pid {
                            crate::process::end_group(pid, leader_start, std::time::Duration::from_secs(2));
                        }
                    }
                }
            }
        }
    }

    /// `memory.remember` for step `seq`: what the agent is told. Idempotent (the same fact again
    /// changes nothing, the same suggestion is not made twice), so a restart may simply do it again.
    pub(super) async fn remember(
        &self,
        seq: i64,
        r: &tools::Remember,
        why: Option<&str>,
    ) -> std::result::Result<String, String> {
        use crate::memory::{self, NewFact, Origin, Remembered};
        let outcome = memory::remember(
            &self.e.store,
            NewFact {
                category: r.category.clone(),
                key: r.key.clone(),
                value: r.value.clone(),
                confidence: r.confidence(),
                origin: Origin::Agent {
                    run: Some(self.run),
                    step: Some(seq),
                    source: r.source.clone().or_else(|| why.map(str::to_owned)),
                },
            },
        )
        .await;
        match outcome {
            Ok(Remembered::Stored { fact }) => Ok(format!(
                "remembered {}.{} (version {})",
                fact.category, fact.key, fact.version
            )),
            Ok(Remembered::Unchanged { fact }) => Ok(format!(
                "already remembered {}.{}; nothing changed",
                fact.category, fact.key
            )),
            Ok(Remembered::Suggested { suggestion }) => Ok(format!(
                "not stored: {}; suggested to the user, who may accept it",
                suggestion.reason
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Records how an effect settled — `Ok(summary)` it happened, `Err(error)` it failed and the
    /// disk shows it did not happen — with the step, the checkpoint and the audit events, in one
    /// transaction. The agent is told first, so the checkpoint holds its state after hearing it.
    pub(super) async fn settle_effect(
        &mut self,
        e: EffectRecord<'_>,
        outcome: Result<&str, &str>,
    ) -> Result<()> {
        let (ok, text) = match outcome {
            Ok(summary) => (true, summary),
            Err(error) => (false, error),
        };
        self.observe(e.seq, e.tool, ok, text)?;
        let (intent_status, step_status, kind) = if ok {
            for img in e.post {
                self.cp.files.insert(img.path.clone(), img.sha256.clone());
            }
            let kind = ev::Kind::from(ev::IntentConfirmed {
                intent: e.intent.to_string(),
                step: e.seq,
                post: e.post.to_vec(),
            });
            (IntentStatus::Confirmed, StepStatus::Done, kind)
        } else {
            let kind = ev::Kind::from(ev::IntentFailed {
                intent: e.intent.to_string(),
                step: e.seq,
                error: text.into(),
            });
            (IntentStatus::BusinessFailed, StepStatus::Failed, kind)
        };
        self.complete(e.seq, e.tool, e.action_hash, step_status, text, text);
        self.stamp(format!("step {} {} {step_status}", e.seq, e.tool));
        let prepared = self.e.prepare(&self.cp, Level::Step)?;
        let now = now_ms();
        let mut tx = self.begin().await?;
        crate::store::processes::end_step(&mut tx, self.run, e.seq, now).await?;
        intents::settle_with_step(
            &mut tx,
            self.run,
            e.seq,
            intent_status,
            step_status,
            text,
            None,
            now,
        )
        .await?;
        let events = vec![audit::Event::new(Actor::Harness, Some(self.run), kind)];
        let checkpoint = self
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
            seq: e.seq,
            tool: e.tool.into(),
            status: step_status,
            why: e.why.map(str::to_owned),
            summary: one_line(text),
            checkpoint,
            reused: false,
        });
        Ok(())
    }

    /// The effect returned an error. If the disk shows it did not happen, that is an ordinary failure
    /// the agent hears about; otherwise nobody can say what happened, and a human decides.
    pub(super) async fn effect_failed(
        &mut self,
        intent: IntentId,
        seq: i64,
        tool: &str,
        action_hash: &str,
        plan: &EffectPlan,
        error: &str,
    ) -> Result<Option<DriveOutcome>> {
        let paths: Vec<_> = plan
            .pre
            .iter()
            .filter_map(|i| self.ws.resolve(&i.path).ok())
            .collect();
        let untouched = self
            .ws
            .hashes(paths.iter())
            .map(|now| crate::journal::settle_files(&plan.pre, &plan.pre, &now) == Settlement::Done)
            .unwrap_or(false);
        if !untouched {
            let why = format!(
                "the effect failed part-way and the files match neither before nor after: {error}"
            );
            return self
                .outcome_unknown(intent, seq, tool, &why)
                .await
                .map(Some);
        }
        let record = EffectRecord {
            intent,
            seq,
            tool,
            action_hash,
            why: None,
            post: &[],
        };
        self.settle_effect(record, Err(error)).await?;
        Ok(None)
    }
}
