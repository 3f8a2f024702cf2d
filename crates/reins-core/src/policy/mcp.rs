//! How Reins judges an MCP tool call. What the tool does is the server's own, so a call is never
//! below medium and is reviewed unless a rule allows it. The server's hints are claims: one that
//! says "destructive" raises the risk, one that says "read-only" lowers nothing. The arguments are
//! Reins' to read: a path among them that is protected, or outside the workspace, or any hidden
//! character, makes the call high risk.

use std::path::{Component, Path};

use super::{Assessment, Context, Protected, Risk};
use crate::text;
use crate::action::McpCall;

/// Longest string argument looked at as a possible path.
const MAX_PATH_LIKE: usize = 1024;

pub fn assess(call: &McpCall, cx: &Context<'_>, protected: &Protected, a: &mut Assessment) {
    a.raise(
        Risk::Medium,
        format!(
            "{}: what it does is the server's own; Reins reads its arguments and takes the server's hints as claims ({})",
            call.describe(),
            call.hints.describe()
        ),
    );
    let h = &call.hints;
    if h.read_only != Some(true) && h.destructive == Some(true) {
        a.raise(
            Risk::High,
            format!(
                "the server says `{}` may overwrite or destroy (destructiveHint)",
                call.tool
            ),
        );
    }
    for (at, s) in call.strings() {
        let at = if at.is_empty() { "the arguments".to_owned() } else { format!("`{at}`") };
        if let Some(why) = text::invisible_reason(&format!("the argument {at}"), s) {
            a.raise(Risk::High, why);
        }
        if let Some(why) = path_reason(s, cx.root, protected) {
            a.raise(Risk::High, format!("the argument {at}: {why}"));
        }
    }
}

/// Why a string argument read as a path is a risk: protected, or outside the workspace.
fn path_reason(s: &str, root: &Path, protected: &Protected) -> Option<String> {
    let s = s.strip_prefix("file://").unwrap_or(s);
    if s.is_empty() || s.len() > MAX_PATH_LIKE || s.contains('\n') {
        return None;
    }
    let looks_like_path = s.starts_with('/') || s.starts_with('~') || s.starts_with('.') || s.contains('/');
    if !looks_like_path {
        return None;
    }
    if s.starts_with('~') {
        return Some(format!("{s} is in a home directory, outside the workspace"));
    }
    let path = Path::new(s);
    if path.is_absolute() {
        let inside = lexical(path).starts_with(root);
        if let Some(why) = protected.why_absolute(path) {
            return Some(format!("{s} is a protected path: {why}"));
        }
        if !inside {
            return Some(format!("{s} is outside the workspace"));
        }
        return None;
    }
    if path.components().any(|c| c == Component::ParentDir) && !lexical(&root.join(path)).starts_with(root) {
        return Some(format!("{s} leads outside the workspace"));
    }
    protected.why(root, s)
}

/// `path` with `.` and `..` taken out, without touching the disk.
fn lexical(path: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::mcp::Hints;
    use serde_json::json;

    fn call(tool: &str, hints: Hints, args: serde_json::Value) -> McpCall {
        McpCall {
            server: "fs".into(),
            identity: "id".into(),
            tool: tool.into(),
            arguments: args,
            description: String::new(),
            hints,
        }
    }

    fn judge(c: &McpCall) -> Assessment {
        let root = Path::new("/work/ws");
        let cx = Context { root, resolved: &[] };
        let mut a = Assessment::new();
        assess(c, &cx, &Protected::NONE, &mut a);
        a
    }

    #[test]
    fn a_read_only_claim_lowers_nothing_and_a_destructive_one_raises() {
        let ro = Hints { read_only: Some(true), ..Hints::default() };
        let a = judge(&call("read_text_file", ro, json!({"path": "/work/ws/a.txt"})));
        assert_eq!(a.risk, Risk::Medium, "{:?}", a.reasons);
        let destructive = Hints { read_only: Some(false), destructive: Some(true), ..Hints::default() };
        let a = judge(&call("write_file", destructive, json!({"path": "/work/ws/a.txt", "content": "x"})));
        assert_eq!(a.risk, Risk::High);
        assert!(a.reasons.iter().any(|r| r.contains("destructiveHint")), "{:?}", a.reasons);
    }

    #[test]
    fn protected_outside_and_hidden_arguments_are_high() {
        for (args, want) in [
            (json!({"path": "/work/ws/.git/config"}), "protected"),
            (json!({"path": ".env"}), "protected"),
            (json!({"path": "/etc/passwd"}), "outside the workspace"),
            (json!({"path": "../x"}), "outside the workspace"),
            (json!({"paths": ["a.txt", "~/.ssh/id_rsa"]}), "home directory"),
            (json!({"uri": "file:///etc/shadow"}), "outside the workspace"),
            (json!({"content": "ok\u{202e}txt"}), "`content`"),
        ] {
            let a = judge(&call("t", Hints::default(), args.clone()));
            assert_eq!(a.risk, Risk::High, "{args}: {:?}", a.reasons);
            assert!(a.reasons.iter().any(|r| r.contains(want)), "{args}: {:?}", a.reasons);
        }
        let plain = judge(&call("t", Hints::default(), json!({"path": "notes/a.md", "content": "a\nb/c"})));
        assert_eq!(plain.risk, Risk::Medium, "{:?}", plain.reasons);
    }

    #[test]
    fn rules_name_servers_tools_and_arguments_and_may_trust_a_named_servers_claims(
    ) -> Result<(), super::super::PolicyError> {
        use super::super::{Decision, Policy, RulePolicy, RuleSet};
        let rules = RuleSet::parse(
            r#"
[[rules]]
decision = "allow"
server = "fs"
trust_read_only = true

[[rules]]
decision = "allow"
server = "fs"
mcp_tool = "write_file"
arguments = { path = "/work/ws/notes/**" }
"#,
            "test",
        )?;
        let policy = RulePolicy::with_rules(Protected::NONE, rules);
        let root = Path::new("/work/ws");
        let judge = |c: McpCall| {
            policy.classify(
                &crate::action::Action::Mcp(c),
                &Context { root, resolved: &[] },
            )
        };
        let ro = Hints { read_only: Some(true), ..Hints::default() };
        let v = judge(call("read_text_file", ro.clone(), json!({"path": "/work/ws/a"})));
        assert_eq!(v.decision, Decision::Allow, "{:?}", v.reasons);
        let other = McpCall { server: "git".into(), ..call("log", ro, json!({})) };
        assert_eq!(judge(other).decision, Decision::Ask, "only the named server is trusted");
        let unclaimed = judge(call("move_file", Hints::default(), json!({})));
        assert_eq!(unclaimed.decision, Decision::Ask);
        let note = judge(call("write_file", Hints::default(), json!({"path": "/work/ws/notes/a.md"})));
        assert_eq!(note.decision, Decision::Allow, "{:?}", note.reasons);
        let elsewhere = judge(call("write_file", Hints::default(), json!({"path": "/work/ws/src/a.rs"})));
        assert_eq!(elsewhere.decision, Decision::Ask);
        let destructive = Hints { destructive: Some(true), ..Hints::default() };
        let high = judge(call("write_file", destructive, json!({"path": "/work/ws/notes/a.md"})));
        assert_eq!(high.decision, Decision::Ask, "high risk is always reviewed");
        for bad in [
            "[[rules]]\ndecision = \"allow\"\ntrust_read_only = true\n",
            "[[rules]]\ndecision = \"allow\"\nserver = \"*\"\ntrust_read_only = true\n",
            "[[rules]]\ndecision = \"allow\"\nserver = \"fs\"\nprogram = \"ls\"\n",
        ] {
            assert!(RuleSet::parse(bad, "t").is_err(), "{bad}");
        }
        Ok(())
    }
}

/// What a rule asks of an MCP call.
#[derive(Clone, Debug, Default)]
pub(super) struct McpMatch {
    pub(super) server: Option<globset::GlobMatcher>,
    pub(super) tool: Option<globset::GlobMatcher>,
    pub(super) arguments: Vec<(String, globset::GlobMatcher)>,
    pub(super) trust_read_only: bool,
}

impl McpMatch {
    pub(super) fn is_empty(&self) -> bool {
        self.server.is_none()
            && self.tool.is_none()
            && self.arguments.is_empty()
            && !self.trust_read_only
    }

    pub(super) fn matches(&self, call: &crate::action::McpCall) -> bool {
        if self.server.as_ref().is_some_and(|g| !g.is_match(&call.server))
            || self.tool.as_ref().is_some_and(|g| !g.is_match(&call.tool))
        {
            return false;
        }
        if self.trust_read_only && call.hints.read_only != Some(true) {
            return false;
        }
        self.arguments.iter().all(|(name, glob)| {
            match call.arguments.get(name) {
                Some(serde_json::Value::String(s)) => glob.is_match(s),
                Some(serde_json::Value::Array(items)) => {
                    !items.is_empty()
                        && items.iter().all(|v| match v {
                            serde_json::Value::String(s) => glob.is_match(s),
                            other => glob.is_match(other.to_string()),
                        })
                }
                Some(other) => glob.is_match(other.to_string()),
                None => false,
            }
        })
    }
}
