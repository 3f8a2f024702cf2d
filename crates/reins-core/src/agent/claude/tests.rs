use serde_json::json;

use super::*;
use crate::progress::Silent;

fn pre() -> Value {
    json!({"hook": "pre", "toolUseId": "t1", "why": "because",
        "call": {"tool": "agent.permission", "args": {"kind": "read", "title": "Read",
            "rawInput": {"file_path": "/w/a.txt"}}}})
}

fn hooked() -> ClaudeAgent {
    ClaudeAgent::new(
        Spec {
            session_id: "s".into(),
            cwd: "/w".into(),
            headless: None,
        },
        None,
    )
}

fn headless() -> ClaudeAgent {
    ClaudeAgent::new(
        Spec {
            session_id: "s".into(),
            cwd: "/w".into(),
            headless: Some(Headless::default()),
        },
        None,
    )
}

fn decided(seq: i64, ok: bool, output: &str, ran: Option<Value>) -> Observation {
    Observation {
        seq,
        tool: "agent.permission".into(),
        ok,
        output: output.into(),
        ran,
        artifact: None,
    }
}

#[tokio::test]
async fn a_taken_request_is_proposed_until_it_is_observed_then_the_agent_detaches() {
    let mut a = hooked();
    assert_eq!(a.next(&Silent).await.ok(), Some(Move::Detach));
    assert!(a.wants_request());
    a.take_request(&pre()).unwrap();
    assert!(!a.wants_request(), "one call at a time");
    // Proposed again after a restore (a decision carried out by another process).
    let saved = a.state();
    let mut b = hooked();
    b.restore(&saved).unwrap();
    for agent in [&mut a, &mut b] {
        assert!(matches!(agent.next(&Silent).await, Ok(Move::Call { .. })));
        assert!(agent.take_request(&pre()).is_err(), "a second call while one is decided");
        agent.observe(&decided(2, true, "allowed", None));
        assert_eq!(agent.next(&Silent).await.ok(), Some(Move::Detach));
        assert!(agent.wants_request());
    }
}

#[tokio::test]
async fn a_post_tool_use_is_an_account_and_no_step() {
    let mut a = hooked();
    a.take_request(&json!({"hook": "post", "detail": {"tool": "Write", "ok": true}}))
        .unwrap();
    assert_eq!(a.next(&Silent).await.ok(), Some(Move::Detach));
    assert_eq!(a.take_accounts().len(), 1);
    assert!(a.take_request(&json!({"hook": "other"})).is_err());
    assert!(a
        .restore(&json!({"pending": null, "decided": 1, "extra": 1}))
        .is_err());
}

#[tokio::test]
async fn a_sessions_end_finishes_the_run_with_its_usage_on_the_record() {
    let mut a = hooked();
    a.take_request(&json!({"hook": "end", "ok": true, "summary": "bye", "usage": {"t": 1}}))
        .unwrap();
    assert!(!a.wants_request(), "nothing is taken after the end");
    assert_eq!(
        a.next(&Silent).await.ok(),
        Some(Move::Finish {
            summary: "bye".into()
        })
    );
    assert_eq!(a.take_accounts().len(), 1, "the usage");
}

#[test]
fn a_hooks_decision_is_kept_for_the_same_call_on_the_channel_with_a_persons_edit() {
    // A session in a terminal has no channel to ask again on: nothing is kept.
    let mut t = hooked();
    t.take_request(&pre()).unwrap();
    t.observe(&decided(7, true, "allowed", None));
    assert_eq!(t.state.answered, None);
    let mut a = headless();
    a.take_request(&pre()).unwrap();
    let edited = json!({"kind": "read", "title": "Read", "rawInput": {"file_path": "/w/b.txt"}});
    a.observe(&decided(7, true, "allowed", Some(edited)));
    let answered = a.state.answered.clone().unwrap_or_else(|| panic!("kept"));
    assert_eq!(answered.seq, 7);
    assert!(answered.allow);
    assert_eq!(answered.input, Some(json!({"file_path": "/w/b.txt"})));
    // Unchanged: no input is handed back.
    a.take_request(&pre()).unwrap();
    a.observe(&decided(8, false, "rejected: not now", Some(pre()["call"]["args"].clone())));
    let answered = a.state.answered.clone().unwrap_or_else(|| panic!("kept"));
    assert_eq!((answered.allow, answered.input), (false, None));
    assert_eq!(answered.reason, "rejected: not now");
}

#[test]
fn a_headless_start_needs_a_goal_or_a_session_and_a_program() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("claude");
    std::fs::write(&program, "").unwrap();
    let start = |goal: Option<&str>, resume: Option<&str>| Start {
        goal: goal.map(str::to_owned),
        resume: resume.map(str::to_owned),
        program: Some(program.clone()),
        ..Start::default()
    };
    assert!(start(None, None).spec(dir.path()).is_err(), "no goal");
    assert!(start(None, Some("../x")).spec(dir.path()).is_err(), "not a session id");
    let (spec, told) = start(Some("write it"), None)
        .spec(dir.path())
        .unwrap();
    let headless = spec.headless.clone().unwrap_or_default();
    assert_eq!((headless.goal.as_str(), headless.resumed, told), ("write it", false, None));
    let (spec, told) = start(Some("go on"), Some("abc-1"))
        .spec(dir.path())
        .unwrap();
    assert_eq!(spec.session_id, "abc-1");
    assert!(spec.headless.is_some_and(|h| h.resumed));
    assert_eq!(told, Some(Request::Prompt { text: "go on".into() }));
    let missing = Start {
        program: Some(dir.path().join("nowhere").join("claude")),
        ..start(Some("x"), None)
    };
    assert!(missing.spec(dir.path()).is_err(), "no such program");
}
