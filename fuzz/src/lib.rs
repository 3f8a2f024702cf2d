//! What each fuzz target checks, beyond "never panics": the invariants a reviewer relies on.
//! Each takes the fuzzer's bytes; a broken invariant panics, which AFL counts as a crash.

use std::path::Path;
use std::sync::OnceLock;

use reins_core::action::{Action, ToolCall};
use reins_core::agent::acp::{AcpAgent, Handled, Landed};
use reins_core::agent::script::Plan;
use reins_core::agent::{Agent as _, Move, Observation};
use reins_core::checkpoint::{self, Payload};
use reins_core::digest::Digest;
use reins_core::policy::rules::RuleSet;
use reins_core::policy::shell::{analyse_argv, analyse_command, Place};
use reins_core::policy::{self, Context, Protected, Risk};
use reins_core::workspace::Workspace;

static NONE: Protected = Protected::NONE;

/// Runs `target` under AFL's persistent loop. A panic the code under test catches itself (the bash
/// parser's, which the classifier turns into "high") is not a crash; one that escapes the target
/// is: afl's own catch aborts on it. Set REINS_FUZZ_VERBOSE to see every panic when replaying an
/// input by hand.
pub fn fuzz(target: fn(&[u8])) {
    let verbose = std::env::var_os("REINS_FUZZ_VERBOSE").is_some();
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if verbose {
            default(info);
        }
    }));
    afl::fuzz_nohook!(|data: &[u8]| {
        target(data);
    });
}

fn place() -> Place<'static> {
    Place {
        root: Path::new("/work/ws"),
        protected: &NONE,
    }
}

/// A small workspace, made once per fuzzing process (AFL's persistent mode keeps it).
fn workspace() -> &'static Workspace {
    static WS: OnceLock<(tempfile::TempDir, Workspace)> = OnceLock::new();
    let (_, ws) = WS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temp dir for the fuzz workspace");
        for (p, text) in [
            ("README.md", "hello\n"),
            ("src/main.rs", "fn main() {}\n"),
            (".env", "K=v\n"),
        ] {
            let path = dir.path().join(p);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("a folder in the fuzz workspace");
            }
            std::fs::write(path, text).expect("a file in the fuzz workspace");
        }
        let ws = Workspace::open(dir.path()).expect("the fuzz workspace opens");
        (dir, ws)
    });
    ws
}

/// The shell classifier: a command string, and the same bytes as an argv split at NUL.
pub fn shell(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let a = analyse_command(text, place());
    // Below high only for what parses (asked only then: the classifier refuses deep nesting
    // before parsing, because the parser's time grows exponentially with it).
    if a.risk < Risk::High {
        assert!(brush_parses(text), "unparseable but {:?}: {text:?}", a.risk);
    }
    let top = a.segments.iter().map(|s| s.risk).max().unwrap_or(Risk::Low);
    assert!(a.risk >= top, "the whole is below a part: {text:?}");
    if a.direct_argv.is_some() {
        assert_eq!(
            a.segments.len(),
            1,
            "a direct argv from several commands: {text:?}"
        );
    }
    if a.segments.is_empty() {
        assert_eq!(a.risk, Risk::High, "nothing seen but not high: {text:?}");
    }
    let argv: Vec<String> = text.split('\0').map(str::to_owned).collect();
    let b = analyse_argv(&argv, place());
    assert!(b.direct_argv.is_some());
}

fn brush_parses(text: &str) -> bool {
    // As the classifier gives it to the parser: ending in a newline.
    let text = &format!("{text}\n");
    // The classifier's own view: a string it refuses to parse (too long, too deep) is high.
    if text.len() > policy::shell::MAX_COMMAND_BYTES {
        return false;
    }
    // As the classifier parses: without extended globs, as `bash -c` does.
    let options = brush_parser::ParserOptions {
        enable_extended_globbing: false,
        ..brush_parser::ParserOptions::default()
    };
    std::panic::catch_unwind(|| {
        brush_parser::Parser::new(std::io::BufReader::new(text.as_bytes()), &options)
            .parse_program()
            .is_ok()
    })
    .unwrap_or(false)
}

/// Plan files: parsed, then every step through the jail and the policy's assessment.
pub fn plan(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(plan) = Plan::from_toml(text, "fuzz") else {
        return;
    };
    for step in &plan.steps {
        let call = ToolCall {
            tool: step.tool.clone(),
            args: step.args.clone(),
        };
        assess_call(&call);
    }
}

fn assess_call(call: &ToolCall) {
    let ws = workspace();
    let Ok(action) = Action::parse(call, ws) else {
        return;
    };
    let cx = Context {
        root: ws.root(),
        resolved: &[],
    };
    let first = policy::assess(&action, &cx, &NONE);
    let again = policy::assess(&action, &cx, &NONE);
    assert_eq!(
        first.risk, again.risk,
        "the same action, two risks: {call:?}"
    );
    // A workspace-relative .env is always a protected path.
    if action.paths().iter().any(|p| p.as_str() == ".env") {
        assert_eq!(first.risk, Risk::High, "{call:?}");
    }
    // An external agent's report Reins cannot read as one of its own actions is high, and one it
    // can read is judged no lower than that action.
    // An MCP tool is the server's own: never below medium, and high when the server says it
    // destroys (its other claims lower nothing).
    if let Action::Mcp(c) = &action {
        assert!(
            first.risk >= Risk::Medium,
            "an MCP call below medium: {call:?}"
        );
        if c.hints.destructive == Some(true) && c.hints.read_only != Some(true) {
            assert_eq!(first.risk, Risk::High, "{call:?}");
        }
    }
    if let Action::Permission(p) = &action {
        match &p.implied {
            // A recall from Reins' own memory server is the one report read without an action.
            None if p.recall => assert_eq!(first.risk, Risk::Low, "{call:?}"),
            None => assert_eq!(
                first.risk,
                Risk::High,
                "unread but {:?}: {call:?}",
                first.risk
            ),
            Some(implied) => {
                let own = policy::assess(implied, &cx, &NONE);
                assert!(first.risk >= own.risk, "below its implied action: {call:?}");
            }
        }
    }
}

/// Checkpoint payloads: decoded under their checksum; what decodes encodes back to itself.
pub fn checkpoint(data: &[u8]) {
    let sha = Digest::of(data);
    // Either version decodes to the current one, which is what is written back.
    let Ok(cp) = checkpoint::decode(1, 1, data, sha.as_str()).map(Payload::into_current) else {
        return;
    };
    let (bytes, digest) = checkpoint::encode(&cp);
    match checkpoint::decode(1, checkpoint::SCHEMA_VERSION, &bytes, digest.as_str()) {
        Ok(Payload::V2(again)) => assert_eq!(again, cp, "a checkpoint does not survive encoding"),
        Ok(other) => panic!("written as an older version: {other:?}"),
        Err(e) => panic!("an encoded checkpoint does not decode: {e}"),
    }
}

/// An approval edit as a person sends it: `{tool?, args}`, kept to the proposed tool, then jailed
/// and assessed; and an external agent's permission request (`agent.permission`), which arrives
/// the same way. The first byte picks the proposed tool.
pub fn edit(data: &[u8]) {
    const TOOLS: &[&str] = &[
        "fs.write",
        "fs.edit",
        "fs.delete",
        "fs.move",
        "fs.read",
        "shell.exec",
        "http.fetch",
        "agent.permission",
        "mcp.call",
    ];
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let tool = TOOLS[*first as usize % TOOLS.len()];
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(rest) else {
        return;
    };
    // As the CLI reads an edit file: `{"tool", "args"}`, or just the args.
    let (named, args) = match (value.get("tool"), value.get("args")) {
        (Some(t), Some(a)) => (t.as_str().map(str::to_owned), a.clone()),
        _ => (None, value),
    };
    // An edit must keep the proposed tool (the engine refuses any other).
    if named.as_deref().is_some_and(|t| t != tool) {
        return;
    }
    assess_call(&ToolCall {
        tool: tool.into(),
        args,
    });
}

/// Policy files, a workspace's `.reins/policy.toml` among them (which the agent can write).
pub fn rules(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(set) = RuleSet::parse(text, "fuzz") {
        let tight = set.tighten_only();
        assert!(tight.expire_after_secs() > 0);
    }
}

/// Messages from an external agent as they land (ACP), one JSON-RPC message a line: decoded as the
/// connection decodes them and handled as a run handles them. Every request that becomes a move is
/// jailed and judged like an edit, and then decided (yes or no, by the line's length) so its answer
/// is built too; a path outside the workspace never becomes an action; the agent's state, whatever
/// it saw, is checkpointed and restored to itself.
pub fn acp(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ws = workspace();
    let mut agent = AcpAgent::detached(ws.root());
    for (i, line) in text.lines().enumerate() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match agent.land(&message) {
            Landed::Request(Handled::Decide(
                Move::Call { call, .. } | Move::Bound { call, .. },
            )) => {
                let outside = call
                    .args
                    .get("path")
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(|p| p.starts_with('/'));
                if outside {
                    assert!(
                        Action::parse(&call, ws).is_err(),
                        "a path outside the workspace became an action: {call:?}"
                    );
                }
                assess_call(&call);
                agent.decided(&Observation {
                    seq: i as i64 + 1,
                    tool: call.tool.clone(),
                    ok: line.len() % 2 == 0,
                    output: "decided by the fuzzer".into(),
                    ran: None,
                    artifact: None,
                });
            }
            Landed::Request(Handled::Decide(other)) => {
                panic!("a request became {other:?}: {line}")
            }
            Landed::Request(Handled::Answer(_)) | Landed::Update(_) | Landed::Dropped => {}
        }
    }
    let state = agent.state();
    let mut again = AcpAgent::detached(ws.root());
    if let Err(e) = again.restore(&state) {
        panic!("the agent's own state does not restore: {e}: {state}");
    }
    assert_eq!(
        again.state(),
        state,
        "the agent's state changed in a checkpoint"
    );
}
