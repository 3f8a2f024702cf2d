//! What a desktop tells its person about: the tray's count of approvals waiting, and a
//! notification for each new one and for each run that stops needing a change, among the runs
//! this machine's alert scope covers (`settings::alerts`).

use std::collections::HashSet;

use super::{ApprovalView, RunSummary};
use crate::ids::RunId;
use crate::run::RunState;
use crate::settings::AlertScope;

/// What changed for the person since the last look.
#[derive(Debug, Default)]
pub struct Alert {
    /// Approvals waiting, among the covered runs: the tray's count.
    pub waiting: usize,
    /// The oldest waiting approvals (up to `TRAY_CARDS`), with their run's name: the tray's list.
    pub first: Vec<(ApprovalView, String)>,
    /// Covered approvals that became pending since the last look, oldest first, with their run's
    /// name.
    pub fresh: Vec<(ApprovalView, String)>,
    /// Covered runs that stopped for a person since the last look: suspended (they need a
    /// change), or paused at their budget (they need a decision).
    pub suspended: Vec<RunSummary>,
}

/// How many waiting cards the tray lists.
pub const TRAY_CARDS: usize = 5;

/// What was already there at the last look: nothing pending or suspended then is announced
/// again, whatever the scope was. The first look announces nothing (it was there before the app).
#[derive(Debug, Default)]
pub struct Alerts {
    seen_approvals: Option<HashSet<String>>,
    seen_suspended: Option<HashSet<RunId>>,
}

impl Alerts {
    /// Takes a look at the pending approvals and the runs (`runs`: None when they could not be
    /// listed; then nothing is known to be mine, so every approval is counted and none of the
    /// runs' news is told).
    pub fn update(
        &mut self,
        pending: Vec<ApprovalView>,
        runs: Option<&[RunSummary]>,
        scope: AlertScope,
        shared: bool,
        this_machine: &str,
    ) -> Alert {
        let pending_ids: HashSet<String> = pending.iter().map(|a| a.id.clone()).collect();
        let covered: Option<HashSet<RunId>> = runs.map(|runs| {
            runs.iter()
                .filter(|r| scope.covers(shared, r.machine.as_deref(), this_machine))
                .map(|r| r.id)
                .collect()
        });
        let name = |run: RunId| {
            runs.and_then(|runs| runs.iter().find(|r| r.id == run))
                .map_or_else(|| "a run".to_owned(), |r| r.name.clone())
        };
        let mut alert = Alert::default();
        for a in pending {
            if covered.as_ref().is_some_and(|c| !c.contains(&a.run_id)) {
                continue;
            }
            alert.waiting += 1;
            if alert.first.len() < TRAY_CARDS {
                alert.first.push((a.clone(), name(a.run_id)));
            }
            if self
                .seen_approvals
                .as_ref()
                .is_some_and(|seen| !seen.contains(&a.id))
            {
                let run = name(a.run_id);
                alert.fresh.push((a, run));
            }
        }
        self.seen_approvals = Some(pending_ids);
        if let (Some(runs), Some(covered)) = (runs, &covered) {
            let now: HashSet<RunId> = runs
                .iter()
                .filter(|r| stopped_for_a_person(r))
                .map(|r| r.id)
                .collect();
            if let Some(before) = &self.seen_suspended {
                alert.suspended = runs
                    .iter()
                    .filter(|r| now.contains(&r.id) && !before.contains(&r.id))
                    .filter(|r| covered.contains(&r.id))
                    .cloned()
                    .collect();
            }
            self.seen_suspended = Some(now);
        }
        alert
    }
}

/// Suspended, or paused at its budget: the run goes nowhere until a person acts.
pub fn stopped_for_a_person(r: &RunSummary) -> bool {
    r.state == RunState::Suspended
        || (r.state == RunState::Paused
            && r
                .last_error
                .as_deref()
                .is_some_and(|e| e.starts_with(crate::engine::AT_BUDGET)))
}
