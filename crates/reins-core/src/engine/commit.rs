//! The engine's one commit path. Every durable change the engine makes is a [`Change`] value — the
//! rows it writes, the checkpoint it records, its audit events, the run's transition and the end of
//! the open attempt — and [`Engine::commit`] seals what it carries, encodes its checkpoint, hands it
//! to the store once (`Store::apply`, which chooses how it lands), then tells the observer what
//! happened, only after the commit.

use crate::checkpoint::{self, Checkpoint, Level};
use crate::error::Result;
use crate::ids::RunId;
use crate::store::audit;
use crate::store::change::{self, Encoded};
use crate::store::write::{Transition, Write};

use super::{Engine, Observer, Progress};

pub(super) use crate::store::change::{Announce, Applied};

/// A checkpoint to write with a change: sealed and encoded when the change commits.
pub(crate) struct Prepared {
    pub(super) level: Level,
    cp: Box<Checkpoint>,
    /// The agent's history entries this checkpoint is the first to cover: (first index, entries),
    /// written in the same transaction.
    pub(super) history: Option<(i64, Vec<String>)>,
}

/// One durable change of one run.
#[derive(Default)]
pub(super) struct Change {
    pub rows: Vec<Write>,
    pub checkpoint: Option<Prepared>,
    pub events: Vec<audit::Event>,
    pub transition: Option<Transition>,
    /// Events that depend on the transition's outcome, appended after it.
    pub announce: Option<Announce>,
    /// Ends the run's open attempt with this outcome.
    pub end_attempt: Option<String>,
    pub report: Vec<Report>,
    /// The disk can settle what it records: it need not be durable on its own.
    pub rides: bool,
}

/// Something to tell the observer once the change is committed.
pub(super) enum Report {
    Now(Progress),
    /// A finished step, told with the seq of the checkpoint the change wrote.
    Step {
        seq: i64,
        tool: String,
        status: crate::step::StepStatus,
        why: Option<String>,
        summary: String,
        reused: bool,
    },
}

impl Change {
    pub fn rows(rows: Vec<Write>) -> Self {
        Self {
            rows,
            ..Self::default()
        }
    }

    pub fn event(mut self, event: audit::Event) -> Self {
        self.events.push(event);
        self
    }

    pub fn events(mut self, events: impl IntoIterator<Item = audit::Event>) -> Self {
        self.events.extend(events);
        self
    }

    pub fn checkpoint(mut self, prepared: Prepared) -> Self {
        self.checkpoint = Some(prepared);
        self
    }

    pub fn moving(mut self, transition: Transition) -> Self {
        self.transition = Some(transition);
        self
    }

    pub fn announcing(mut self, announce: Announce) -> Self {
        self.announce = Some(announce);
        self
    }

    pub fn ending_attempt(mut self, outcome: impl Into<String>) -> Self {
        self.end_attempt = Some(outcome.into());
        self
    }

    pub fn report(mut self, report: Report) -> Self {
        self.report.push(report);
        self
    }

    /// Rides with the next durable commit (`Store::begin_riding`): only for what recovery can
    /// settle from the disk if it is lost, a file effect's confirmation.
    pub fn riding(mut self) -> Self {
        self.rides = true;
        self
    }
}

impl Engine {
    /// A checkpoint to write with a change, as it is now.
    pub(crate) fn prepare(&self, cp: &Checkpoint, level: Level) -> Result<Prepared> {
        Ok(Prepared {
            level,
            cp: Box::new(cp.clone()),
            history: None,
        })
    }

    /// Seals the secrets a checkpoint holds (the agent's state; the step summaries, which are for
    /// people, are redacted) and encodes it; payloads over the inline limit go to the blob store
    /// (durably) first.
    pub(super) async fn encode(&self, p: Prepared) -> Result<Encoded> {
        let Prepared { level, mut cp, .. } = p;
        for done in &mut cp.completed {
            if let std::borrow::Cow::Owned(s) = crate::secrets::redact(&done.summary) {
                done.summary = s;
            }
        }
        cp.agent = self.sealed_value(&cp.agent, "the agent's checkpointed state").await?;
        let (bytes, digest) = checkpoint::encode(&cp);
        let in_blob = bytes.len() > checkpoint::INLINE_LIMIT;
        if in_blob {
            self.blobs.put(&bytes).await?;
        }
        Ok(Encoded {
            level,
            bytes,
            sha256: digest.as_str().to_owned(),
            in_blob,
        })
    }

    /// Applies several person's changes, each to its own run, in one transaction: all or none.
    pub(super) async fn commit_all(&self, changes: Vec<(RunId, Change)>) -> Result<Vec<Applied>> {
        let mut out = Vec::with_capacity(changes.len());
        for (run, c) in changes {
            if c.checkpoint.is_some() {
                return Err(crate::Error::Invalid(
                    "a change committed with others writes no checkpoint".into(),
                ));
            }
            out.push((
                run,
                change::Change {
                    rows: self.sealed(c.rows).await?,
                    checkpoint: None,
                    events: c.events,
                    transition: c.transition,
                    announce: c.announce,
                    end_attempt: c.end_attempt,
                    rides: false,
                },
            ));
        }
        Ok(self.store.apply_all(out).await?)
    }

    /// Applies `change` to `run` in one go (as `owner` when a worker commits it), then reports.
    pub(super) async fn commit(
        &self,
        run: Option<RunId>,
        change: Change,
        owner: Option<&audit::Owner>,
        observer: &dyn Observer,
    ) -> Result<Applied> {
        let (change, report) = self.ready(change).await?;
        let applied = self.store.apply(run, change, owner).await?;
        tell(observer, report, &applied);
        Ok(applied)
    }

    /// Applies `changes` to `run`, in order, in one transaction (as `owner`), then reports each:
    /// a file effect's held confirmation with the drive's next change (`Store::apply_together`).
    pub(super) async fn commit_together(
        &self,
        run: Option<RunId>,
        changes: Vec<Change>,
        owner: Option<&audit::Owner>,
        observer: &dyn Observer,
    ) -> Result<Vec<Applied>> {
        let mut ready = Vec::with_capacity(changes.len());
        let mut reports = Vec::with_capacity(changes.len());
        for c in changes {
            let (change, report) = self.ready(c).await?;
            ready.push(change);
            reports.push(report);
        }
        let applied = self.store.apply_together(run, ready, owner).await?;
        for (report, applied) in reports.into_iter().zip(&applied) {
            tell(observer, report, applied);
        }
        Ok(applied)
    }

    /// A change as the store takes it, its rows sealed and its checkpoint encoded, and what to
    /// tell the observer once it commits.
    async fn ready(&self, change: Change) -> Result<(change::Change, Vec<Report>)> {
        let Change {
            mut rows,
            mut checkpoint,
            events,
            transition,
            announce,
            end_attempt,
            report,
            rides,
        } = change;
        if let Some((from, entries)) = checkpoint.as_mut().and_then(|p| p.history.take()) {
            rows.push(Write::History { from, entries });
        }
        let rows = self.sealed(rows).await?;
        let checkpoint = match checkpoint {
            Some(p) => Some(self.encode(p).await?),
            None => None,
        };
        let change = change::Change {
            rows,
            checkpoint,
            events,
            transition,
            announce,
            end_attempt,
            rides,
        };
        Ok((change, report))
    }
}

/// Tells `observer` what a committed change did.
fn tell(observer: &dyn Observer, report: Vec<Report>, applied: &Applied) {
    for r in report {
        observer.on(&match r {
            Report::Now(p) => p,
            Report::Step {
                seq,
                tool,
                status,
                why,
                summary,
                reused,
            } => Progress::Step {
                seq,
                tool,
                status,
                why,
                summary,
                checkpoint: applied.checkpoint.unwrap_or(0),
                reused,
            },
        });
    }
}
