//! Orienting a resumed run: fingerprint the workspace, work out what changed outside the run, and
//! give the agent (and the record) a recovery summary before it proposes anything.

use std::collections::BTreeMap;

use crate::event as ev;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::journal::IntentStatus;
use crate::resume::RecoverySummary;
use crate::store::write::Write;
use crate::store::{audit, audit::Actor, intents, processes, steps};
use crate::workspace::fingerprint::{self, ChangeKind, Fingerprint};

use super::commit::Change;
use super::drive::Drive;
use super::Engine;
use crate::ids::RunId;
use crate::resume::SettledEffect;
use crate::store::{attempts, runs};
use super::Progress;

impl Drive<'_> {
    /// Ends the processes an earlier attempt's tools left running (its worker died under them),
    /// before the journal is settled and before anything runs again.
    pub(super) async fn end_orphans(&mut self) -> Result<()> {
        for p in processes::open(self.e.store.pool(), self.run).await? {
            // This run's external agent, kept alive here while the run waited: not an orphan.
            if u32::try_from(p.pid).is_ok_and(|pid| self.e.sessions.is_kept(self.run, pid)) {
                continue;
            }
            let (pid, pgid, start) = (
                u32::try_from(p.pid).unwrap_or(0),
                u32::try_from(p.pgid).unwrap_or(0),
                u64::try_from(p.start_time).unwrap_or(0),
            );
            let was_running = crate::process::is_running(pid, start)
                || !crate::process::group_members(pgid).is_empty();
            let ended = if was_running {
                tokio::task::spawn_blocking(move || {
                    crate::process::end_group(pgid, start, std::time::Duration::from_secs(3))
                })
                .await
                .unwrap_or(false)
            } else {
                true
            };
            let outcome = match (was_running, ended) {
                (true, true) => "ended on recovery: an orphan of a lost worker",
                (true, false) => "still running after SIGKILL",
                (false, _) => "had already exited",
            };
            let change = Change::rows(vec![Write::ProcessEnded {
                seq: p.step_seq,
                pid: p.pid,
                outcome: outcome.into(),
            }])
            .event(audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::OrphanEnded {
                    step: p.step_seq,
                    pid: p.pid,
                    command: p.command.clone(),
                    outcome: outcome.into(),
                },
            ));
            self.commit(change).await?;
            if was_running && !ended {
                return Err(Error::Io {
                    context: format!("ending orphan process {} of step {}", p.pid, p.step_seq),
                    source: std::io::Error::other("it survived SIGKILL"),
                });
            }
            // A tool server the last attempt ended itself, as it does whenever it stops: not news
            // for the agent or the person (the audit log still has it).
            if !was_running && p.command.starts_with(crate::mcp::hub::PROCESS_LABEL) {
                continue;
            }
            self.resumed.ended_processes.push(format!(
                "pid {} ({}) of step {}: {outcome}",
                p.pid, p.command, p.step_seq
            ));
            self.obs.on(&Progress::Settled {
                step: p.step_seq,
                tool: p.command.clone(),
                how: format!("process {}: {outcome}", p.pid),
            });
        }
        Ok(())
    }

    /// Runs once per attempt, after the journal is settled. The workspace's fingerprint it took,
    /// if it took one (an agent that runs outside Reins is not fingerprinted here).
    pub(super) async fn orient(&mut self) -> Result<Option<Fingerprint>> {
        if self.agent.external().is_some_and(|x| x.runs_outside()) {
            return Ok(None);
        }
        let (changed_outside, now) = self.observe_workspace().await?;
        let resuming = self.attempt > 1
            || self.cp.next_step > 1
            || !self.resumed.settled.is_empty()
            || !self.resumed.ended_processes.is_empty();
        if !resuming {
            return Ok(Some(now));
        }
        let mut recent_steps = Vec::new();
        for st in steps::recent(self.e.store.pool(), self.run, self.cp.next_step, 5).await? {
            // The summary is stored with the attempt: a sealed secret stays sealed in it.
            let line = crate::seal::shown(&st.summary_line()).into_owned();
            let what = format!("step {}'s result", st.seq);
            let result = self
                .e
                .opened_text(st.result.as_deref().unwrap_or(""), &what)
                .await?;
            recent_steps.push(crate::checkpoint::ToolRecord {
                seq: st.seq,
                tool: st.tool,
                action_hash: st.action_hash,
                status: st.status.as_str().into(),
                result_sha256: Digest::of(result.as_bytes()),
                summary: line.chars().take(200).collect(),
            });
        }
        let summary = RecoverySummary {
            attempt: self.attempt,
            resumed_from: self.resumed.from,
            steps_done: self.cp.next_step - 1,
            current_step: self.cp.current_step,
            next_step: self.cp.next_step,
            recent_steps,
            files: self.known_files().await?,
            last_error: self.resumed.stopped_because.clone(),
            settled: self.resumed.settled.clone(),
            ended_processes: self.resumed.ended_processes.clone(),
            changed_outside,
            text: String::new(),
        }
        .with_text();
        if let Some(c) = self.agent.conversation() {
            c.recovered(&summary);
        }
        let change = Change::rows(vec![Write::AttemptRecovery {
            attempt: self.attempt,
            summary: Box::new(summary.clone()),
        }])
        .event(audit::Event::new(
            Actor::Harness,
            Some(self.run),
            ev::Kind::Recovered(summary.clone()),
        ));
        self.commit(change).await?;
        let after_review = summary.continues_a_decision();
        let answered = summary.last_error.as_deref() == Some("awaiting input");
        self.obs.on(&Progress::Recovered {
            attempt: self.attempt,
            changed_outside: summary.changed_outside.len(),
            text: summary.text,
            after_review: after_review.filter(|_| !answered),
            after_answer: after_review.filter(|_| answered),
        });
        Ok(Some(now))
    }

    /// Files the run has touched and their content as it left them: the checkpoint's map plus
    /// effects confirmed after that checkpoint (settled on restart or by a person).
    pub(super) async fn known_files(&self) -> Result<BTreeMap<String, Option<Digest>>> {
        let mut known = self.cp.files.clone();
        for intent in intents::from_step(self.e.store.pool(), self.run, self.cp.next_step).await? {
            if intent.status == IntentStatus::Confirmed {
                for img in intent.post_images {
                    known.insert(img.path, img.sha256);
                }
            }
        }
        Ok(known)
    }

    /// Takes this attempt's fingerprint (the baseline for the next resume); what changed since the
    /// previous one that this run did not do, and the fingerprint.
    async fn observe_workspace(&mut self) -> Result<(Vec<fingerprint::Change>, Fingerprint)> {
        let previous = self.stored_fingerprint().await?;
        let now = self.rescan(previous.clone().unwrap_or_default()).await?;
        self.cp.workspace = Some(self.e.blobs.put(&now.to_bytes()).await?);
        let Some(old) = previous else {
            return Ok((Vec::new(), now));
        };
        let known = self.known_files().await?;
        let changes = fingerprint::diff(&old, &now)
            .into_iter()
            .filter(|c| !explained(c, &known))
            .map(|mut c| {
                // Against what the run left, not against the older baseline.
                if let Some(expected) = known.get(&c.path) {
                    c.kind = match (expected, c.kind) {
                        (_, ChangeKind::Removed) => ChangeKind::Removed,
                        (Some(_), _) => ChangeKind::Modified,
                        (None, _) => ChangeKind::Added,
                    };
                }
                c
            })
            .collect();
        Ok((changes, now))
    }

    /// The workspace's fingerprint the checkpoint holds, if any.
    pub(super) async fn stored_fingerprint(&self) -> Result<Option<Fingerprint>> {
        Ok(match &self.cp.workspace {
            Some(d) => self.e.blob(d).await?.and_then(|b| Fingerprint::from_bytes(&b)),
            None => None,
        })
    }

    /// Fingerprints the workspace, reusing `previous`'s hashes where nothing moved.
    pub(super) async fn rescan(&self, previous: Fingerprint) -> Result<Fingerprint> {
        let root = self.ws.root().to_path_buf();
        let shown = root.display().to_string();
        tokio::task::spawn_blocking(move || fingerprint::scan(&root, &previous))
            .await
            .map_err(|e| Error::Io {
                context: "fingerprinting the workspace".into(),
                source: std::io::Error::other(e.to_string()),
            })?
            .map(|(fp, _)| fp)
            .map_err(|source| Error::Io {
                context: format!("fingerprinting {shown}"),
                source,
            })
    }
}

/// The run's own doing: the content is what the journal says the run left there.
pub(super) fn explained(
    c: &fingerprint::Change,
    known: &BTreeMap<String, Option<Digest>>,
) -> bool {
    match known.get(&c.path) {
        None => false,
        Some(None) => c.kind == ChangeKind::Removed,
        Some(Some(d)) => c.kind != ChangeKind::Removed && c.sha256.as_ref() == Some(d),
    }
}

impl super::Engine {
    /// Records a process group leader a tool just started (in its own group, see
    /// `process::spawn_in_group`) for step `step` of `run`, so a later attempt can end it if this
    /// worker dies.
    pub async fn track_pid(
        &self,
        run: crate::ids::RunId,
        step: i64,
        pid: u32,
        command: &str,
    ) -> Result<()> {
        let start = crate::process::start_time(pid).unwrap_or(0);
        crate::store::processes::record(
            self.store.pool(),
            run,
            &crate::store::processes::NewProcess {
                step_seq: step,
                pid,
                start_time: start,
                pgid: pid,
                // Only to tell people which process it was: a secret in it is not needed.
                command: &crate::secrets::redact(command),
                now: crate::clock::now_ms(),
            },
        )
        .await?;
        Ok(())
    }
}

/// Why the run had stopped before this attempt: its last error, else the previous attempt's
/// outcome (a resume clears the run's reason).
pub(super) async fn stopped_because(e: &Engine, row: &runs::RunRow) -> Result<Option<String>> {
    let previous_outcome = attempts::list(e.store.pool(), row.id)
        .await?
        .into_iter()
        .rev()
        .nth(1)
        .and_then(|a| a.outcome);
    Ok(match (&row.last_error, previous_outcome) {
        (Some(e), _) => Some(e.clone()),
        (None, Some(outcome)) if outcome.starts_with("lost") => {
            Some("its worker stopped (crashed, killed or frozen) mid-run".into())
        }
        (None, Some(outcome)) => Some(outcome),
        (None, None) => None,
    })
}

/// Effects a person decided since the run's previous attempt began (`reins resolve`).
pub(super) async fn settled_by_person(e: &Engine, run: RunId) -> Result<Vec<SettledEffect>> {
    let attempts = attempts::list(e.store.pool(), run).await?;
    let since = match attempts.iter().rev().nth(1) {
        Some(previous) => previous.started_at,
        None => return Ok(Vec::new()),
    };
    Ok(intents::settled_since(e.store.pool(), run, since)
        .await?
        .into_iter()
        .filter_map(|i| {
            let how = i.settled_by.clone()?;
            how.contains("a person").then_some(SettledEffect {
                step: i.step_seq,
                tool: i.tool,
                status: i.status.as_str().into(),
                how,
            })
        })
        .collect())
}

/// What this attempt knows about the run's past, for the recovery summary it gives the agent.
pub(super) struct Resumption {
    /// The checkpoint this attempt resumed from.
    pub from: Option<i64>,
    /// Why the run had stopped before this attempt.
    pub stopped_because: Option<String>,
    /// Effects the previous attempt left unsettled, and how they were settled.
    pub settled: Vec<SettledEffect>,
    /// Orphan processes of earlier attempts this one ended.
    pub ended_processes: Vec<String>,
}
