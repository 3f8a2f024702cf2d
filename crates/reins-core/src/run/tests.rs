//! Pure FSM transition tests. No IO, no async.

use rstest::rstest;

use super::*;
use RunEvent as E;
use RunState as S;

#[rstest]
#[case(S::Queued, E::Start, S::Running)]
#[case(S::Queued, E::Cancel, S::Cancelled)]
#[case(S::Queued, E::RequestPause, S::Paused)]
#[case(S::Running, E::AwaitApproval, S::AwaitingApproval)]
#[case(S::Running, E::AwaitInput, S::AwaitingInput)]
#[case(S::AwaitingInput, E::Answer, S::Queued)]
#[case(S::AwaitingInput, E::RequestPause, S::Paused)]
#[case(S::AwaitingInput, E::Suspend, S::Suspended)]
#[case(S::AwaitingInput, E::Cancel, S::Cancelled)]
#[case(S::PauseRequested, E::AwaitInput, S::AwaitingInput)]
#[case(S::Running, E::RequestPause, S::PauseRequested)]
#[case(S::Running, E::Suspend, S::Suspended)]
#[case(S::Running, E::Retry, S::Queued)]
#[case(S::Running, E::Succeed, S::Succeeded)]
#[case(S::Running, E::Fail, S::Failed)]
#[case(S::Running, E::Cancel, S::Cancelled)]
#[case(S::AwaitingApproval, E::Decide, S::Queued)]
#[case(S::AwaitingApproval, E::RequestPause, S::Paused)]
#[case(S::AwaitingApproval, E::Suspend, S::Suspended)]
#[case(S::AwaitingApproval, E::Cancel, S::Cancelled)]
#[case(S::PauseRequested, E::ReachSafePoint, S::Paused)]
#[case(S::PauseRequested, E::AwaitApproval, S::AwaitingApproval)]
#[case(S::PauseRequested, E::Resume, S::Running)]
#[case(S::PauseRequested, E::Suspend, S::Suspended)]
#[case(S::PauseRequested, E::Retry, S::Paused)]
#[case(S::PauseRequested, E::Succeed, S::Succeeded)]
#[case(S::PauseRequested, E::Fail, S::Failed)]
#[case(S::PauseRequested, E::Cancel, S::Cancelled)]
#[case(S::Paused, E::Resume, S::Queued)]
#[case(S::Paused, E::Cancel, S::Cancelled)]
#[case(S::Suspended, E::Resume, S::Queued)]
#[case(S::Suspended, E::Cancel, S::Cancelled)]
#[case(S::Running, E::Detach, S::Attached)]
#[case(S::PauseRequested, E::Detach, S::Paused)]
#[case(S::Attached, E::Start, S::Running)]
#[case(S::Attached, E::RequestPause, S::Paused)]
#[case(S::Attached, E::Succeed, S::Succeeded)]
#[case(S::Attached, E::Cancel, S::Cancelled)]
fn legal(#[case] from: RunState, #[case] event: RunEvent, #[case] to: RunState) {
    assert_eq!(
        next(from, event),
        Some(to),
        "{from} --{event:?}--> {to} must be legal"
    );
}

/// The spec above, restated as a set, so every other (state, event) pair is checked to be illegal.
const LEGAL: &[(RunState, RunEvent)] = &[
    (S::Running, E::Detach),
    (S::PauseRequested, E::Detach),
    (S::Attached, E::Start),
    (S::Attached, E::RequestPause),
    (S::Attached, E::Succeed),
    (S::Attached, E::Cancel),
    (S::Queued, E::Start),
    (S::Queued, E::Cancel),
    (S::Queued, E::RequestPause),
    (S::Running, E::AwaitApproval),
    (S::Running, E::AwaitInput),
    (S::AwaitingInput, E::Answer),
    (S::AwaitingInput, E::RequestPause),
    (S::AwaitingInput, E::Suspend),
    (S::AwaitingInput, E::Cancel),
    (S::PauseRequested, E::AwaitInput),
    (S::Running, E::RequestPause),
    (S::Running, E::Suspend),
    (S::Running, E::Retry),
    (S::Running, E::Succeed),
    (S::Running, E::Fail),
    (S::Running, E::Cancel),
    (S::AwaitingApproval, E::Decide),
    (S::AwaitingApproval, E::RequestPause),
    (S::AwaitingApproval, E::Suspend),
    (S::AwaitingApproval, E::Cancel),
    (S::PauseRequested, E::ReachSafePoint),
    (S::PauseRequested, E::AwaitApproval),
    (S::PauseRequested, E::Resume),
    (S::PauseRequested, E::Suspend),
    (S::PauseRequested, E::Retry),
    (S::PauseRequested, E::Succeed),
    (S::PauseRequested, E::Fail),
    (S::PauseRequested, E::Cancel),
    (S::Paused, E::Resume),
    (S::Paused, E::Cancel),
    (S::Suspended, E::Resume),
    (S::Suspended, E::Cancel),
];

#[test]
fn every_other_pair_is_illegal() {
    let mut illegal = 0;
    for from in RunState::ALL {
        for event in RunEvent::ALL {
            if !LEGAL.contains(&(from, event)) {
                assert_eq!(
                    next(from, event),
                    None,
                    "{from} --{event:?}--> must be illegal"
                );
                illegal += 1;
            }
        }
    }
    assert_eq!(
        illegal,
        RunState::ALL.len() * RunEvent::ALL.len() - LEGAL.len()
    );
}

#[test]
fn terminal_states_have_no_way_out() {
    for from in RunState::ALL.into_iter().filter(|s| s.is_terminal()) {
        for event in RunEvent::ALL {
            assert_eq!(next(from, event), None, "{from} is terminal");
        }
    }
}

#[test]
fn names_round_trip() {
    for s in RunState::ALL {
        assert_eq!(RunState::parse(s.as_str()), Some(s));
        assert_eq!(
            serde_json::to_value(s).ok(),
            Some(serde_json::Value::from(s.as_str()))
        );
    }
    assert_eq!(RunState::parse("runnin"), None);
}
