//! The row writes a durable change is made of, and the run transitions it may end with, as values.
//! The engine describes one change (`engine::commit::Change`) with these; they are applied here, in
//! the order given, inside the change's one transaction. Every guarded write keeps its meaning: a
//! write that finds its row moved on fails, and nothing of the change commits.

use super::approvals::{self, ApprovalRow, DecisionWrite, Edit};
use super::devices::{self, DeviceRow, PairingRow};
use super::fused::Tail;
use super::grants::{self, GrantRow};
use super::intents::{self, IntentRow};
use super::manifests::{self, ManifestRow};
use super::requests;
use super::memory_write::{self, MemoryWrite, MemoryWritten};
use super::runs::{self, Claim, RunRow};
use super::steps::{self, StepRow};
use super::{attempts, checkpoints, processes, retries, Result, StoreError, Tx};
use crate::approval::{Scope, Status};
use crate::checkpoint::DamageKind;
use crate::compat::Compat;
use crate::failure::FailureClass;
use crate::ids::RunId;
use crate::journal::IntentStatus;
use crate::resume::RecoverySummary;
use crate::run::RunState;
use crate::step::StepStatus;

pub use super::transition::{transition, Moved, Transition};

/// One row write of a change (all for the change's run unless the write names its own rows).
#[derive(Clone, Debug)]
pub enum Write {
    /// Extends the worker's lease; fails unless it still holds the run.
    RenewLease {
        fence: i64,
        until: i64,
    },
    /// Claims the run for a worker and opens its attempt (closing any attempt a lost worker left
    /// open, with `lost`). Fails with `StaleState` when someone moved first.
    Claim {
        expected_version: i64,
        to: RunState,
        owner: String,
        lease_until: i64,
        gone_owner: Option<String>,
        lost: Option<String>,
    },
    /// A new run. `sole`: refused ([`StoreError::Conflict`]) while the newest run of its kind by
    /// its name is still open (neither succeeded nor failed) — an outside agent's session has one.
    RunInsert {
        row: Box<RunRow>,
        spec: String,
        sole: bool,
    },
    RunCompat(Box<Compat>),
    /// What the run may spend (an empty budget removes it).
    Budget(crate::budget::Budget),
    /// An external agent's running totals of what it spent, from `source` (one of its sessions).
    AgentUsage {
        source: String,
        tokens: i64,
        cost_micros: Option<i64>,
    },
    /// Holds a queued run back until then (a retry's backoff).
    RunNotBefore(i64),
    /// Moves the fence on, so whatever worker held the run can write nothing more for it.
    BumpFence,
    /// Records a retry the run used from its budget.
    Retry {
        class: FailureClass,
        error: String,
        delay_ms: i64,
    },
    AttemptRecovery {
        attempt: i64,
        summary: Box<RecoverySummary>,
    },
    DamageAcknowledged {
        seq: i64,
        kind: DamageKind,
    },
    PruneCheckpoints {
        through: i64,
    },
    /// Entries of the agent's history from `from` on, with the checkpoint that first covers them.
    History {
        from: i64,
        entries: Vec<String>,
    },
    /// Token counts of earlier turns a model call made with `counter`: (digest, tokens).
    TokenCounts {
        counter: String,
        counts: Vec<(String, i64)>,
    },
    /// A resume verified the run's checkpoints through `through` (whose checksum is `sha256`).
    CheckpointsVerified {
        through: i64,
        sha256: String,
    },
    Step(Box<StepRow>),
    /// Removes a step parked for review, so it is recorded again with what actually happened.
    StepReopened(i64),
    StepUsage {
        seq: i64,
        tokens_in: i64,
        tokens_out: i64,
        cost_micros: Option<i64>,
    },
    /// A person's answer to the question step `seq`.
    Answer {
        seq: i64,
        text: String,
    },
    /// The step, the intent of its effect and the small pre-images, in one round trip.
    Intent {
        step: Box<StepRow>,
        intent: Box<IntentRow>,
        small_blobs: Vec<Vec<u8>>,
    },
    /// Settles the pending intent of step `seq` and finishes the step; fails unless it is pending.
    /// With `ends_processes`, every process the step started ended with it.
    Settle {
        seq: i64,
        status: IntentStatus,
        step_status: StepStatus,
        result: String,
        settled_by: Option<String>,
        ends_processes: bool,
    },
    /// A person settles an intent nobody could (pending on a stopped run, or unknown).
    SettleByPerson {
        seq: i64,
        status: IntentStatus,
        step_status: StepStatus,
        result: String,
        settled_by: String,
    },
    /// Removes an unsettled intent and its step, so the step is proposed and run again.
    ForgetForRetry(i64),
    Manifest(Box<ManifestRow>),
    ProcessEnded {
        seq: i64,
        pid: i64,
        outcome: String,
    },
    Approval(Box<ApprovalRow>),
    /// Fails with `Conflict` unless the approval is still pending.
    ApprovalStillPending(String),
    ApprovalDecided {
        id: String,
        status: Status,
        by: String,
        note: Option<String>,
        scope: Option<Scope>,
        edited: Option<Box<Edit>>,
    },
    /// The staged result an approval lands, without the files the person left out.
    StagedLeftOut { id: String, staged: Box<crate::stage::effect::StagedEffect> },
    /// A pending review timed out and pauses; fails with `Conflict` unless still pending.
    ApprovalPaused(String),
    /// A rejection refused `count` calls queued after its own as well.
    SiblingsRejected { id: String, count: i64 },
    ApprovalSuperseded {
        id: String,
        by: String,
        why: String,
    },
    /// Ends every pending approval of the run (it was cancelled); their ids are reported.
    ApprovalsClosed {
        why: String,
    },
    Grant(Box<GrantRow>),
    /// Counts a grant's use; fails when it was revoked meanwhile.
    GrantUsed(String),
    /// Fails with `Conflict` when it is already revoked.
    GrantRevoked(String),
    /// A one-time pairing code offered to a device (`reins serve pair`).
    PairingOffered(Box<PairingRow>),
    /// A device exchanged pairing `pairing` for its token; fails with `Conflict` when the code was
    /// used meanwhile or has expired.
    Paired {
        pairing: String,
        device: Box<DeviceRow>,
    },
    /// Fails with `Conflict` when the device is already revoked.
    DeviceRevoked(String),
    /// A setting (`memory.enabled`, the provider's defaults…); its old value is reported when the
    /// value changed.
    Setting { key: String, value: String },
    Memory(MemoryWrite),
    /// A request an agent outside Reins makes of the run (`requests`).
    Request { id: String, body: String },
    /// The drive took request `id`, decided by step `seq` (a tool call) or only recorded; fails
    /// with `Conflict` when it was taken or withdrawn meanwhile.
    RequestTaken { id: String, seq: Option<i64> },
    /// Its asker stopped waiting for request `id`; fails with `Conflict` when it was taken.
    RequestWithdrawn(String),
}

/// What a write reports back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Written {
    /// From a claim: the new fence and the attempt it opened.
    pub claimed: Option<(i64, i64)>,
    /// From a retry: its number and when the run's first retry happened.
    pub retry: Option<(i64, i64)>,
    /// Approvals ended with the run.
    pub closed: Vec<String>,
    /// Settings whose value changed: (key, old value, new value).
    pub settings: Vec<(String, Option<String>, String)>,
    pub memory: MemoryWritten,
}

/// Whether `writes` are only a step's own rows, which, in a run its worker holds, are committed
/// without waking other processes (`Store::begin_quiet`): no worker, inbox or waiter acts on
/// them, and screens poll for them. Everything else wakes them: runs queued or claimed,
/// approvals, answers, grants, devices, fences and retries.
pub fn steps_own(writes: &[Write]) -> bool {
    writes.iter().all(|w| {
        matches!(
            w,
            Write::Step(_)
                | Write::StepUsage { .. }
                | Write::Intent { .. }
                | Write::Settle { .. }
                | Write::History { .. }
                | Write::TokenCounts { .. }
                | Write::Manifest(_)
                | Write::ProcessEnded { .. }
                | Write::RenewLease { .. }
        )
    })
}

/// Whether the last of `writes` can carry a tail (`apply_with`): a step's intent or its settling.
pub fn carries_tail(writes: &[Write]) -> bool {
    matches!(writes.last(), Some(Write::Intent { .. } | Write::Settle { .. }))
}

/// Applies `writes` in order for `run` (None: a change of no run in particular) inside `tx`, with
/// `tail` travelling in the last write's statement when that write is a step's
/// intent or its settling (`store::fused`). Also returns the rows the tail's checkpoint and events
/// changed; `None` when it did not travel.
pub async fn apply_with(
    tx: &mut Tx,
    run: Option<RunId>,
    writes: &[Write],
    now: i64,
    tail: Option<&Tail<'_>>,
) -> Result<(Written, Option<(i64, i64)>)> {
    let mut out = Written::default();
    let mut carried = None;
    let last = writes.len().saturating_sub(1);
    for (i, w) in writes.iter().enumerate() {
        let tail = tail.filter(|_| i == last);
        apply_one(tx, run, w, now, &mut out, tail, &mut carried).await?;
    }
    Ok((out, carried))
}

/// The run a write is for; a run's write in a change of no run is a harness bug, refused.
pub fn of_run(run: Option<RunId>) -> Result<RunId> {
    run.ok_or_else(|| StoreError::Invalid("a run's row was written in a change of no run".into()))
}

async fn apply_one(
    tx: &mut Tx,
    run: Option<RunId>,
    w: &Write,
    now: i64,
    out: &mut Written,
    tail: Option<&Tail<'_>>,
    carried: &mut Option<(i64, i64)>,
) -> Result<()> {
    // Writes that name their own rows need no run.
    match w {
        Write::Approval(row) => return approvals::insert(tx, row).await,
        Write::ApprovalStillPending(id) => {
            let current = approvals::get(&mut **tx, id).await?;
            if current.is_none_or(|c| c.status != Status::Pending) {
                return Err(StoreError::Conflict(format!(
                    "approval {id} was decided meanwhile"
                )));
            }
            return Ok(());
        }
        Write::ApprovalSuperseded { id, by, why } => {
            return approvals::supersede(tx, id, by, why, now).await
        }
        Write::ApprovalPaused(id) => return approvals::pause(tx, id, now).await,
        Write::SiblingsRejected { id, count } => {
            return approvals::siblings_rejected(tx, id, *count).await
        }
        Write::Grant(g) => return grants::insert(tx, g).await,
        Write::GrantUsed(id) => return grants::used(tx, id, now).await,
        Write::GrantRevoked(id) => return grants::revoke(tx, id, now).await,
        Write::PairingOffered(p) => return devices::insert_pairing(tx, p).await,
        Write::Paired { pairing, device } => {
            return devices::pair(tx, pairing, device, now).await
        }
        Write::DeviceRevoked(id) => return devices::revoke(tx, id, now).await,
        Write::Setting { key, value } => {
            let old = super::memory::set_setting(tx, key, value, now).await?;
            if old.as_deref() != Some(value.as_str()) {
                out.settings.push((key.clone(), old, value.clone()));
            }
            return Ok(());
        }
        Write::Memory(m) => return memory_write::apply(tx, m, now, &mut out.memory).await,
        Write::RequestTaken { id, seq } => return requests::taken(tx, id, *seq, now).await,
        Write::RequestWithdrawn(id) => return requests::withdraw(tx, id).await,
        Write::RunInsert { row, spec, sole } => {
            if *sole && runs::newest_named_open(tx, &row.agent_kind, &row.name).await? {
                return Err(StoreError::Conflict(format!(
                    "a run named {:?} is open already",
                    row.name
                )));
            }
            return runs::insert(tx, row, spec).await;
        }
        _ => {}
    }
    let run = of_run(run)?;
    match w {
        Write::RenewLease { fence, until } => runs::renew(tx, run, *fence, *until, now).await?,
        Write::Claim {
            expected_version,
            to,
            owner,
            lease_until,
            gone_owner,
            lost,
        } => {
            let (fence, _) = runs::claim(
                tx,
                run,
                &Claim {
                    expected_version: *expected_version,
                    to: *to,
                    owner,
                    lease_until: *lease_until,
                    now,
                    gone_owner: gone_owner.as_deref(),
                },
            )
            .await?;
            if let Some(why) = lost {
                attempts::end_open(tx, run, why, now).await?;
            }
            let attempt = attempts::start(tx, run, owner, fence, now).await?;
            out.claimed = Some((fence, attempt));
        }
        Write::RunCompat(compat) => runs::set_compat(tx, run, compat).await?,
        Write::Budget(b) => super::budgets::set(tx, run, b).await?,
        Write::AgentUsage {
            source,
            tokens,
            cost_micros,
        } => super::budgets::agent_usage(tx, run, source, *tokens, *cost_micros).await?,
        Write::RunNotBefore(at) => runs::set_not_before(tx, run, *at).await?,
        Write::BumpFence => {
            runs::bump_fence(tx, run).await?;
        }
        Write::Retry {
            class,
            error,
            delay_ms,
        } => out.retry = Some(retries::record(tx, run, now, *class, error, *delay_ms).await?),
        Write::AttemptRecovery { attempt, summary } => {
            attempts::set_recovery(tx, run, *attempt, summary).await?
        }
        Write::DamageAcknowledged { seq, kind } => {
            checkpoints::acknowledge_damage(tx, run, *seq, *kind, now).await?;
        }
        Write::PruneCheckpoints { through } => {
            checkpoints::prune(tx, run, *through, now).await?;
        }
        Write::History { from, entries } => {
            super::history::put(tx, run, *from, entries).await?;
        }
        Write::TokenCounts { counter, counts } => {
            super::token_counts::put(tx, run, counter, counts).await?;
        }
        Write::CheckpointsVerified { through, sha256 } => {
            checkpoints::verified(tx, run, *through, sha256).await?;
        }
        Write::Step(step) => steps::insert(tx, run, step).await?,
        Write::StepReopened(seq) => steps::reopen(tx, run, *seq).await?,
        Write::StepUsage {
            seq,
            tokens_in,
            tokens_out,
            cost_micros,
        } => steps::set_usage(tx, run, *seq, *tokens_in, *tokens_out, *cost_micros).await?,
        Write::Answer { seq, text } => steps::answer(tx, run, *seq, text, now).await?,
        Write::Intent {
            step,
            intent,
            small_blobs,
        } => {
            let blobs: Vec<&[u8]> = small_blobs.iter().map(Vec::as_slice).collect();
            let counts = intents::insert_with_step(tx, run, step, intent, &blobs, tail).await?;
            *carried = tail.map(|_| counts);
        }
        Write::Settle {
            seq,
            status,
            step_status,
            result,
            settled_by,
            ends_processes,
        } => {
            let counts = intents::settle_with_step(
                tx,
                run,
                intents::Settling {
                    step_seq: *seq,
                    status: *status,
                    step_status: *step_status,
                    result,
                    settled_by: settled_by.as_deref(),
                    ends_processes: *ends_processes,
                },
                now,
                tail,
            )
            .await?;
            *carried = tail.map(|_| counts);
        }
        Write::SettleByPerson {
            seq,
            status,
            step_status,
            result,
            settled_by,
        } => {
            intents::settle_by_person(
                tx,
                run,
                *seq,
                *status,
                *step_status,
                result,
                settled_by,
                now,
            )
            .await?
        }
        Write::ForgetForRetry(seq) => intents::forget_for_retry(tx, run, *seq).await?,
        Write::Request { id, body } => requests::insert(tx, run, id, body, now).await?,
        Write::Manifest(row) => manifests::insert(tx, run, row).await?,
        Write::ProcessEnded { seq, pid, outcome } => {
            processes::end(tx, run, *seq, *pid, outcome, now).await?
        }
        Write::StagedLeftOut { id, staged } => approvals::leave_out(tx, id, staged).await?,
        Write::ApprovalDecided {
            id,
            status,
            by,
            note,
            scope,
            edited,
        } => {
            approvals::decide(
                tx,
                id,
                &DecisionWrite {
                    status: *status,
                    by,
                    note: note.as_deref(),
                    scope: *scope,
                    edited: edited.as_deref(),
                    now,
                },
            )
            .await?
        }
        Write::ApprovalsClosed { why } => {
            out.closed = approvals::close_for_run(tx, run, why, now).await?;
        }
        Write::Approval(_)
        | Write::ApprovalStillPending(_)
        | Write::ApprovalSuperseded { .. }
        | Write::ApprovalPaused(_)
        | Write::SiblingsRejected { .. }
        | Write::Grant(_)
        | Write::GrantUsed(_)
        | Write::GrantRevoked(_)
        | Write::PairingOffered(_)
        | Write::Paired { .. }
        | Write::DeviceRevoked(_)
        | Write::Setting { .. }
        | Write::Memory(_)
        | Write::RequestTaken { .. }
        | Write::RequestWithdrawn(_)
        | Write::RunInsert { .. } => {}
    }
    Ok(())
}
