//! Step 8: the effect — a file change applied through the jail, a command in its own process
//! group, a request to the addresses the policy judged, a fact remembered — carried out only after
//! its intent is durable (step 7) and confirmed after (step 9). A read-only action has no intent:
//! it runs and is recorded.

use std::net::IpAddr;

use crate::error::Result;
use crate::fault_point;
use crate::journal::EffectClass;
use crate::step::StepStatus;
use crate::tools::shell::ShellOutcome;
use crate::action::{Action, ShellCommand};
use crate::tools::{self, EffectPlan};

use super::confirm::EffectRecord;
use super::drive::Drive;
use super::record::StepRecord;
use super::DriveOutcome;

/// A command as it will run: what `prepare_command` read from it.
pub(super) struct PreparedCommand {
    pub(super) argv: Vec<String>,
    /// Its confinement, or why it runs without one.
    pub(super) confined: std::result::Result<crate::contain::Confined, String>,
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
        if let (Action::Permission(p), Some(plan)) = (action, plan.as_ref()) {
            if p.implied.as_deref().is_some_and(Action::is_file_effect) {
                return self.hand_over(rec, action, plan).await.map(|_| None);
            }
        }
        if action.effect_class() == EffectClass::Pure {
            let guard = tools::ReadGuard {
                protected: self.e.policy.protected(),
                judged_high: rec.verdict.is_some_and(|v| v.risk >= crate::policy::Risk::High),
            };
            let (status, ok, out, summary) = match tools::run_pure(action, &self.ws, guard) {
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
        // A command's argv and profile are fixed before its intent, which records the profile.
        // A staged command's approved result is applied as files (the plan): it does not run.
        let command = match action {
            Action::Shell(cmd) if plan.is_none() => Some(self.prepare_command(cmd)?),
            _ => None,
        };
        let profile = command
            .as_ref()
            .and_then(|c| c.confined.as_ref().ok())
            .map(|c| c.profile.hash());
        // 7. Intent, durably, with the pre-images it needs.
        let intent = self.intend(rec, action, plan.as_ref(), profile.clone()).await?;

        // 8. Execute, unless the run may have been taken over meanwhile: then the intent stays
        // pending and whoever owns the run settles it (the disk says whether it happened).
        if !self.may_run_effect() {
            return Ok(Some(DriveOutcome::Lost {
                reason: format!(
                    "step {seq}: the lease ran short before the effect; not running it"
                ),
            }));
        }
        let record = |post: &'static [crate::journal::FileImage]| EffectRecord {
            intent,
            seq,
            tool: action.tool(),
            action_hash: rec.action_hash,
            why: rec.why,
            post,
            ran: Some(&rec.action.call().args),
            contained: None,
            from_disk: false,
        };
        // 9. Confirm (confirm.rs): what happened, or what the disk proves did not.
        match (action, &plan) {
            (_, Some(plan)) => {
                if let Err(err) = tools::apply(plan, &self.ws) {
                    let failed = EffectRecord {
                        why: None,
                        ..record(&[])
                    };
                    return self.effect_failed(failed, plan, &err).await;
                }
                fault_point!("after_effect");
                let done = EffectRecord {
                    post: &plan.post,
                    from_disk: true,
                    ..record(&[])
                };
                let result = if plan.failed {
                    Err(&*plan.summary)
                } else {
                    Ok(&*plan.summary)
                };
                self.settle_effect(done, result).await?;
            }
            (Action::Shell(cmd), None) => {
                let outcome = match command {
                    Some(prepared) => self.run_shell(seq, cmd, prepared).await,
                    None => Err("the command was not prepared".into()),
                };
                fault_point!("after_effect");
                match outcome {
                    Ok(o) => {
                        let contained = profile.map(|profile_sha256| crate::event::Contained {
                            step: seq,
                            program: o.program.clone(),
                            profile_sha256,
                            enforced: o.contained.clone(),
                            blocked: o.blocked.clone(),
                        });
                        let done = EffectRecord {
                            contained,
                            ..record(&[])
                        };
                        let report = o.report();
                        let result = if o.ok() { Ok(&*report) } else { Err(&*report) };
                        self.settle_effect(done, result).await?
                    }
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
            (Action::Mcp(call), None) => {
                let outcome = self.call_mcp(call).await;
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

    /// An external agent allowed to change files itself: before it hears yes, the intent commits
    /// with the pre-images of the files it reported (so rollback covers what it does), audited as
    /// handed to the agent; then the step is confirmed with the files as the agent said they would
    /// be. Reins writes nothing. A crash before the confirmation leaves the intent pending: not a
    /// change Reins can read back as its own, so a person decides (`reins resolve`).
    async fn hand_over(
        &mut self,
        rec: &StepRecord<'_>,
        action: &Action,
        plan: &EffectPlan,
    ) -> Result<()> {
        let intent = self.intend(rec, action, Some(plan), None).await?;
        let change = super::commit::Change::default().event(crate::store::audit::Event::new(
            crate::event::Actor::Harness,
            Some(self.run),
            crate::event::HandedToAgent {
                intent: intent.to_string(),
                step: rec.seq,
                pre: plan.pre.clone(),
                post: plan.post.clone(),
            },
        ));
        self.commit(change).await?;
        let done = EffectRecord {
            intent,
            seq: rec.seq,
            tool: action.tool(),
            action_hash: rec.action_hash,
            why: rec.why,
            post: &plan.post,
            ran: Some(&rec.action.call().args),
            contained: None,
            from_disk: false,
        };
        self.settle_effect(done, Ok("allowed: the agent makes this change itself"))
            .await
    }

    /// What a command runs as, read once: its argv, and the profile it runs under (the workspace
    /// writable minus its protected paths, no network unless a program on the card reaches it;
    /// none without a confinement helper).
    pub(super) fn prepare_command(&self, cmd: &ShellCommand) -> Result<PreparedCommand> {
        use crate::action::shell::Sandbox;
        let analysis = cmd.analyse(self.place());
        let argv = cmd.argv(&analysis);
        // The network, or no sandbox at all, only as the card said and a person approved it (or
        // for a program the person's own policy switched confinement off for).
        let switched = self.e.policy().unconfined_programs();
        let escape = crate::policy::escape(cmd, &analysis.segments, &switched);
        let network = match cmd.sandbox {
            Sandbox::Unconfined => None,
            Sandbox::Confined if escape.is_some() => None,
            Sandbox::Network => Some(true),
            Sandbox::Confined => Some(false),
        };
        let Some(network) = network else {
            let why = escape.unwrap_or_default();
            return Ok(PreparedCommand {
                argv,
                confined: Err(format!("unconfined, as the person chose: {}", why.trim_start_matches("it runs unconfined: "))),
            });
        };
        let confined = self
            .e
            .contain
            .prepare(self.ws.root(), |places| {
                crate::contain::Profile::command(places, network)
            })
            .map_err(|source| crate::error::Error::Io {
                context: "preparing the command's confinement".into(),
                source,
            })?
            .ok_or_else(|| "unconfined: no confinement helper in this process".to_owned());
        Ok(PreparedCommand { argv, confined })
    }

    /// Runs a command in its own process group, recorded so a later attempt can end it; if the run
    /// is lost meanwhile (cancelled, taken over), the group is ended at once.
    pub(super) async fn run_shell(
        &mut self,
        seq: i64,
        cmd: &ShellCommand,
        prepared: PreparedCommand,
    ) -> std::result::Result<ShellOutcome, String> {
        let PreparedCommand { argv, confined } = prepared;
        let root = self.ws.root().to_owned();
        let timeout = std::time::Duration::from_secs(cmd.timeout_s);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let handle = tokio::task::spawn_blocking(move || {
            tools::shell::run(&argv, &root, timeout, confined.as_ref().map_err(String::as_str), move |pid| {
                let _ = tx.send(pid);
            })
        });
        match self.watch_group(seq, &cmd.display(), rx, handle).await {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(e)) => Err(format!("could not start the command: {e}")),
            Err(e) => Err(format!("the command's runner failed: {e}")),
        }
    }

    /// Waits for `handle`, a blocking runner that says on `started` which process group it
    /// started: the group is recorded against step `seq` so a later attempt can end it, and it is
    /// ended at once if the run is lost meanwhile (cancelled, taken over); the run's own row is
    /// read once a second, so a cancel from another process ends the group in a second.
    pub(super) async fn watch_group<T>(
        &mut self,
        seq: i64,
        what: &str,
        started: tokio::sync::oneshot::Receiver<u32>,
        mut handle: tokio::task::JoinHandle<T>,
    ) -> std::result::Result<T, tokio::task::JoinError> {
        let pid = started.await.ok();
        if let Some(pid) = pid {
            if let Err(e) = self.e.track_pid(self.run, seq, pid, what).await {
                tracing::warn!("could not record process {pid} of step {seq}: {e}");
            }
        }
        let leader_start = pid.and_then(crate::process::start_time).unwrap_or(0);
        let mut ticks = 0u32;
        loop {
            tokio::select! {
                joined = &mut handle => return joined,
                _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {
                    ticks += 1;
                    if ticks.is_multiple_of(5) {
                        self.read_own_row().await;
                    }
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
        r: &crate::action::Remember,
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
}
