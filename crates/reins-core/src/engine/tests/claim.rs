//! Whether a worker may take a run: decided from the run's row and the clock alone.

use crate::engine::claim::{claimable, Claimable};
use crate::engine::DriveOutcome;
use crate::run::RunState;

use super::fixtures::run_row;

const NOW: i64 = 1_000_000;

#[test]
fn a_queued_run_is_claimed_and_starts() {
    let row = run_row(RunState::Queued);
    assert_eq!(
        claimable(&row, NOW, false, false),
        Claimable::Yes {
            to: RunState::Running,
            adopting: false,
            gone: false
        }
    );
}

#[test]
fn a_run_held_under_a_live_lease_is_left_alone_naming_its_holder() {
    let mut row = run_row(RunState::Running);
    row.owner = Some("host:42:7:abc".into());
    row.lease_until = Some(NOW + 10_000);
    match claimable(&row, NOW, false, false) {
        Claimable::No(DriveOutcome::Skipped { reason, .. }) => {
            assert!(reason.contains("host:42:7:abc"), "{reason}");
            assert!(reason.contains("11 more seconds"), "{reason}");
        }
        other => panic!("expected skip, got {other:?}"),
    }
}

#[test]
fn a_run_whose_lease_ran_out_is_adopted_in_its_state() {
    let mut row = run_row(RunState::PauseRequested);
    row.owner = Some("host:42:7:abc".into());
    row.lease_until = Some(NOW - 1);
    assert_eq!(
        claimable(&row, NOW, false, false),
        Claimable::Yes {
            to: RunState::PauseRequested,
            adopting: true,
            gone: false
        }
    );
}

#[test]
fn a_run_whose_holder_died_is_adopted_without_waiting_for_its_lease() {
    let mut row = run_row(RunState::Running);
    row.owner = Some("host:42:7:abc".into());
    row.lease_until = Some(NOW + 30_000);
    assert_eq!(
        claimable(&row, NOW, false, true),
        Claimable::Yes {
            to: RunState::Running,
            adopting: true,
            gone: true
        }
    );
}

#[test]
fn finished_runs_and_runs_waiting_for_a_person_are_not_claimed() {
    for state in [
        RunState::Succeeded,
        RunState::Failed,
        RunState::Cancelled,
        RunState::AwaitingApproval,
        RunState::AwaitingInput,
        RunState::Paused,
        RunState::Suspended,
    ] {
        let mut row = run_row(state);
        row.last_error = Some("why it stopped".into());
        match claimable(&row, NOW, false, false) {
            Claimable::No(DriveOutcome::Skipped { state: s, reason }) => {
                assert_eq!(s, state);
                assert_eq!(reason, "why it stopped", "{state}");
            }
            other => panic!("{state}: expected skip, got {other:?}"),
        }
    }
}

#[test]
fn a_run_in_retry_backoff_waits_until_its_time() {
    let mut row = run_row(RunState::Queued);
    row.not_before = Some(NOW + 5_000);
    assert!(matches!(
        claimable(&row, NOW, false, false),
        Claimable::No(_)
    ));
    assert!(matches!(
        claimable(&row, NOW + 5_000, false, false),
        Claimable::Yes { .. }
    ));
}

#[test]
fn a_draining_worker_claims_nothing() {
    let row = run_row(RunState::Queued);
    assert!(matches!(
        claimable(&row, NOW, true, false),
        Claimable::No(_)
    ));
}
