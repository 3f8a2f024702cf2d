//! Policy rules from TOML. Each rule has a decision and matchers (tool, paths, program + argument
//! patterns, hosts); all given matchers must match. Rules are evaluated deny → ask → allow: the first
//! tier with a matching rule decides. A shell command is decided per simple command and the strictest
//! wins, so allowing `echo` never allows `echo hi; rm -rf x`.
//!
//! ```toml
//! [review]
//! expire_after_secs = 86400      # a pending review times out after this long, and then
//! on_timeout = "pause"           # stays open with no deadline while the run waits (the default),
//!                                # or "deny": it expires and the action is refused
//!
//! [budget]                       # what a new run may spend before it pauses and asks (each
//! tokens = 200000                # optional; a run's own budget or the Settings' come first)
//! cost_usd = 5.0
//! wall_minutes = 120
//! steps = 300
//!
//! [containment]
//! unconfined_commands = "review" # where the kernel cannot confine commands (no Landlock, or an
//!                                # older ABI): review every one (the default), or "allow" them
//!                                # by the rules as usual. Yours only: a workspace's file cannot.
//! unconfined_programs = ["docker"] # these run outside the sandbox: high risk, reviewed each
//!                                # time, never covered by a lasting grant. Yours only, too.
//!
//! [staging]                      # commands that need review run first in a copy of the
//! never = ["git push", "deploy"] # workspace; these are shown and approved as commands instead;
//! always = ["make"]              # these are staged and reviewed even where a rule allows them.
//!                                # A program, or a program and its first words. Yours only.
//!
//! [telemetry]                    # OpenTelemetry export (see docs/observability.md), where neither
//! endpoint = "http://localhost:6006" # the OTEL_* environment nor the Settings say. Yours only.
//!
//! [[rules]]
//! decision = "allow"             # allow | ask | deny
//! tool = "shell.exec"            # a glob over tool names: "fs.*"
//! program = "cargo"              # shell only: the program's base name
//! args = ["test"]                # shell only: globs matched against the first arguments
//! reason = "tests are how we check work"
//!
//! [[rules]]
//! decision = "ask"
//! program = "terraform"
//! on_timeout = "deny"            # ask rules only: what this review becomes at its timeout
//!
//! [[rules]]
//! decision = "deny"
//! tool = "fs.*"
//! paths = ["secrets/**"]         # every path the action names must match one of these globs
//!
//! [[rules]]
//! decision = "allow"
//! tool = "http.fetch"
//! hosts = ["docs.rs", "*.github.com"]
//!
//! [[rules]]
//! decision = "allow"
//! server = "fs"                  # MCP only: a glob over registered server names
//! mcp_tool = "read_*"            # MCP only: a glob over the server's tool names
//! arguments = { path = "/home/me/project/docs/**" }  # MCP only: each named argument must match
//!
//! [[rules]]
//! decision = "allow"
//! server = "fs"
//! trust_read_only = true         # MCP only: allow the tools this server says are read-only
//! ```
//!
//! An MCP server's hints are its claims: only a rule that names the server may trust them.

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

use super::mcp::McpMatch;
use super::{Assessment, Decision};
use crate::digest::Digest;
use crate::action::Action;

pub const DEFAULT_EXPIRE_SECS: i64 = 24 * 3600;

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("policy {path}: {detail}")]
    Parse { path: String, detail: String },
    #[error("cannot read policy {path}: {detail}")]
    Read { path: String, detail: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    review: Option<Review>,
    #[serde(default)]
    containment: Option<Containment>,
    #[serde(default)]
    budget: Option<crate::budget::BudgetToml>,
    #[serde(default)]
    staging: Option<super::staging::Staging>,
    /// Read by the telemetry export, which knows its shape; kept whole here.
    #[serde(default)]
    telemetry: Option<toml::Table>,
    #[serde(default)]
    rules: Vec<RuleText>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Review {
    expire_after_secs: Option<i64>,
    on_timeout: Option<OnTimeout>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Containment {
    unconfined_commands: Option<Unconfined>,
    unconfined_programs: Option<Vec<String>>,
}

/// What happens to commands where the kernel cannot confine them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unconfined {
    /// Every command waits for a person.
    #[default]
    Review,
    /// Commands are decided by the rules, as where they are confined.
    Allow,
}

/// What a review that waited past its deadline becomes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum OnTimeout {
    /// It stays open with no deadline, and the run waits for it, holding nothing: decided later, the
    /// run goes on. Nothing is lost by waiting, so this is the default.
    #[default]
    Pause,
    /// It expires and the action is refused (fails closed).
    Deny,
}

impl OnTimeout {
    pub fn as_str(self) -> &'static str {
        match self {
            OnTimeout::Pause => "pause",
            OnTimeout::Deny => "deny",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleText {
    decision: Decision,
    tool: Option<String>,
    paths: Option<Vec<String>>,
    program: Option<String>,
    args: Option<Vec<String>>,
    hosts: Option<Vec<String>>,
    server: Option<String>,
    mcp_tool: Option<String>,
    arguments: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    trust_read_only: bool,
    on_timeout: Option<OnTimeout>,
    reason: Option<String>,
}

#[derive(Clone, Debug)]
struct Rule {
    n: usize,
    decision: Decision,
    tool: Option<GlobMatcher>,
    paths: Option<Vec<GlobMatcher>>,
    program: Option<String>,
    args: Option<Vec<GlobMatcher>>,
    hosts: Option<Vec<GlobMatcher>>,
    mcp: McpMatch,
    on_timeout: Option<OnTimeout>,
    reason: Option<String>,
    origin: String,
    /// What it matches, as written in the file.
    text: String,
}

/// One rule as people read it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RuleLine {
    /// Its number in its file.
    pub n: usize,
    pub decision: Decision,
    /// What it matches: `tool = "shell.exec", program = "touch"`.
    pub matches: String,
    pub reason: Option<String>,
    /// The file it comes from.
    pub origin: String,
}

/// What a rule's fields say, in the file's own words.
fn rule_text(r: &RuleText) -> String {
    let list = |l: &Option<Vec<String>>| {
        l.as_ref()
            .map(|v| format!("[{}]", v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", ")))
    };
    let mut parts = Vec::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            parts.push(format!("{k} = {v}"));
        }
    };
    put("tool", r.tool.as_ref().map(|t| format!("{t:?}")));
    put("paths", list(&r.paths));
    put("program", r.program.as_ref().map(|t| format!("{t:?}")));
    put("args", list(&r.args));
    put("hosts", list(&r.hosts));
    put("server", r.server.as_ref().map(|t| format!("{t:?}")));
    put("mcp_tool", r.mcp_tool.as_ref().map(|t| format!("{t:?}")));
    put(
        "arguments",
        r.arguments.as_ref().map(|a| {
            format!(
                "{{{}}}",
                a.iter().map(|(k, v)| format!("{k} = {v:?}")).collect::<Vec<_>>().join(", ")
            )
        }),
    );
    put("on_timeout", r.on_timeout.map(|t| format!("{:?}", t.as_str())));
    if r.trust_read_only {
        put("trust_read_only", Some("true".into()));
    }
    if parts.is_empty() {
        "every action".into()
    } else {
        parts.join(", ")
    }
}

#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    rules: Vec<Rule>,
    expire_after_secs: Option<i64>,
    on_timeout: Option<OnTimeout>,
    unconfined_commands: Unconfined,
    unconfined_programs: Vec<String>,
    budget: crate::budget::Budget,
    staging: super::staging::Staging,
    telemetry: Option<toml::Table>,
    digest: Option<Digest>,
}

fn glob(text: &str, what: &str, origin: &str) -> Result<GlobMatcher, PolicyError> {
    Glob::new(text)
        .map(|g| g.compile_matcher())
        .map_err(|e| PolicyError::Parse {
            path: origin.into(),
            detail: format!("{what} {text:?} is not a valid glob: {e}"),
        })
}

impl RuleSet {
    pub fn parse(text: &str, origin: &str) -> Result<Self, PolicyError> {
        let file: File = toml::from_str(text).map_err(|e| PolicyError::Parse {
            path: origin.into(),
            detail: e.to_string(),
        })?;
        let mut rules = Vec::new();
        for (i, r) in file.rules.into_iter().enumerate() {
            let text = rule_text(&r);
            let globs = |list: Option<Vec<String>>,
                         what: &str|
             -> Result<Option<Vec<GlobMatcher>>, PolicyError> {
                list.map(|l| l.iter().map(|g| glob(g, what, origin)).collect())
                    .transpose()
            };
            if r.args.is_some() && r.program.is_none() {
                return Err(PolicyError::Parse {
                    path: origin.into(),
                    detail: format!("rule {}: `args` needs `program`", i + 1),
                });
            }
            let bad = |detail: String| PolicyError::Parse {
                path: origin.into(),
                detail: format!("rule {}: {detail}", i + 1),
            };
            if r.trust_read_only && r.server.as_deref().is_none_or(|s| s.contains(['*', '?', '[', '{'])) {
                return Err(bad(
                    "`trust_read_only` needs `server` naming one server: a server's claims are trusted by name".into(),
                ));
            }
            if r.on_timeout.is_some() && r.decision != Decision::Ask {
                return Err(bad(
                    "`on_timeout` only makes sense on an ask rule: it says what its review becomes when nobody decides it in time".into(),
                ));
            }
            if r.trust_read_only && r.decision != Decision::Allow {
                return Err(bad("`trust_read_only` only makes sense on an allow rule".into()));
            }
            let mcp = McpMatch {
                server: r.server.as_deref().map(|g| glob(g, "server", origin)).transpose()?,
                tool: r.mcp_tool.as_deref().map(|g| glob(g, "mcp_tool", origin)).transpose()?,
                arguments: r
                    .arguments
                    .unwrap_or_default()
                    .iter()
                    .map(|(k, g)| glob(g, "argument pattern", origin).map(|m| (k.clone(), m)))
                    .collect::<Result<_, _>>()?,
                trust_read_only: r.trust_read_only,
            };
            if !mcp.is_empty() && (r.program.is_some() || r.paths.is_some() || r.hosts.is_some()) {
                return Err(bad(
                    "MCP matchers (server, mcp_tool, arguments, trust_read_only) cannot be mixed with paths, program or hosts".into(),
                ));
            }
            rules.push(Rule {
                n: i + 1,
                text,
                mcp,
                on_timeout: r.on_timeout,
                decision: r.decision,
                tool: r
                    .tool
                    .as_deref()
                    .map(|t| glob(t, "tool", origin))
                    .transpose()?,
                paths: globs(r.paths, "path")?,
                program: r.program.map(|p| super::protected::fold(&p)),
                args: globs(r.args, "argument")?,
                hosts: globs(
                    r.hosts
                        .map(|h| h.into_iter().map(|x| x.to_lowercase()).collect()),
                    "host",
                )?,
                reason: r.reason,
                origin: origin.into(),
            });
        }
        if let Some(secs) = file.review.as_ref().and_then(|r| r.expire_after_secs) {
            if secs <= 0 {
                return Err(PolicyError::Parse {
                    path: origin.into(),
                    detail: "review.expire_after_secs must be positive".into(),
                });
            }
        }
        let budget = file.budget.unwrap_or_default().budget().map_err(|detail| {
            PolicyError::Parse {
                path: origin.into(),
                detail,
            }
        })?;
        Ok(Self {
            rules,
            budget,
            expire_after_secs: file.review.as_ref().and_then(|r| r.expire_after_secs),
            on_timeout: file.review.and_then(|r| r.on_timeout),
            unconfined_commands: file
                .containment
                .as_ref()
                .and_then(|c| c.unconfined_commands)
                .unwrap_or_default(),
            unconfined_programs: file
                .containment
                .and_then(|c| c.unconfined_programs)
                .unwrap_or_default(),
            staging: file.staging.unwrap_or_default().checked(origin)?,
            telemetry: file.telemetry,
            digest: Some(Digest::of(text.as_bytes())),
        })
    }

    /// The rules as people read them, in the order they are weighed: every deny rule first, then
    /// ask, then allow (within a tier, the file's order).
    pub fn lines(&self) -> Vec<RuleLine> {
        [Decision::Deny, Decision::Ask, Decision::Allow]
            .iter()
            .flat_map(|tier| self.rules.iter().filter(move |r| r.decision == *tier))
            .map(|r| RuleLine {
                n: r.n,
                decision: r.decision,
                matches: r.text.clone(),
                reason: r.reason.clone(),
                origin: r.origin.clone(),
            })
            .collect()
    }

    /// Keeps only the rules that can make a decision stricter.
    pub fn tighten_only(mut self) -> Self {
        self.rules.retain(|r| r.decision != Decision::Allow);
        self.expire_after_secs = None;
        self.on_timeout = None;
        self.unconfined_commands = Unconfined::Review;
        self.unconfined_programs.clear();
        self.staging = super::staging::Staging::default();
        self.budget = crate::budget::Budget::default();
        // A workspace's file cannot send the person's runs anywhere.
        self.telemetry = None;
        self
    }

    /// `[telemetry]` as written (the export reads it; None: the file has none).
    pub fn telemetry(&self) -> Option<&toml::Table> {
        self.telemetry.as_ref()
    }

    /// The budget every new run gets where neither it nor the Settings say (`[budget]`).
    pub fn budget(&self) -> crate::budget::Budget {
        self.budget
    }

    pub fn digest(&self) -> Digest {
        self.digest.clone().unwrap_or_else(|| Digest::of(b""))
    }

    pub fn expire_after_secs(&self) -> i64 {
        self.expire_after_secs.unwrap_or(DEFAULT_EXPIRE_SECS)
    }

    /// What a review becomes at its timeout when no rule says (`[review] on_timeout`).
    pub fn on_timeout(&self) -> OnTimeout {
        self.on_timeout.unwrap_or_default()
    }

    pub fn unconfined_commands(&self) -> Unconfined {
        self.unconfined_commands
    }

    pub fn unconfined_programs(&self) -> &[String] {
        &self.unconfined_programs
    }

    pub fn staging(&self) -> &super::staging::Staging {
        &self.staging
    }
}

impl Rule {
    fn label(&self) -> String {
        let why = self
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        format!(
            "rule {} of {} ({}){why}",
            self.n,
            self.origin,
            self.decision.as_str()
        )
    }

    /// Whether the rule matches the action as a whole (everything but program/args).
    fn matches_action(&self, action: &Action) -> bool {
        if let Some(t) = &self.tool {
            if !t.is_match(action.tool()) {
                return false;
            }
        }
        if !self.mcp.is_empty() {
            match action {
                Action::Mcp(call) if self.mcp.matches(call) => {}
                _ => return false,
            }
        }
        if let Some(globs) = &self.paths {
            let paths = action.paths();
            if paths.is_empty()
                || !paths
                    .iter()
                    .all(|p| globs.iter().any(|g| g.is_match(p.as_str())))
            {
                return false;
            }
        }
        if let Some(globs) = &self.hosts {
            match action.host() {
                Some(h) => {
                    if !globs.iter().any(|g| g.is_match(h.to_lowercase())) {
                        return false;
                    }
                }
                None => return false,
            }
        }
        true
    }

    /// Whether the rule matches one simple command of a shell action.
    fn matches_segment(&self, seg: &super::shell::Segment) -> bool {
        if let Some(p) = &self.program {
            let Some(prog) = &seg.program else {
                return false;
            };
            let base = super::protected::fold(prog.rsplit('/').next().unwrap_or(prog));
            if &base != p {
                return false;
            }
        }
        if let Some(args) = &self.args {
            if seg.args.len() < args.len() {
                return false;
            }
            if !args.iter().zip(&seg.args).all(|(g, a)| g.is_match(a)) {
                return false;
            }
        }
        true
    }

    fn shell_only(&self) -> bool {
        self.program.is_some()
    }
}

/// What the rules say of an action.
#[derive(Debug, Default)]
pub struct Ruling {
    /// None: no rule matched.
    pub decision: Option<Decision>,
    pub reasons: Vec<String>,
    /// What its review becomes at the timeout, where an ask rule that matched says so ("deny" over
    /// "pause" when several do).
    pub on_timeout: Option<OnTimeout>,
}

/// The decision of the rules for an action, with the reasons.
pub fn decide(sets: &[&RuleSet], action: &Action, a: &Assessment) -> Ruling {
    let tiers = [Decision::Deny, Decision::Ask, Decision::Allow];
    let rules: Vec<&Rule> = sets.iter().flat_map(|s| s.rules.iter()).collect();
    let first = |pred: &dyn Fn(&Rule) -> bool| -> Option<&Rule> {
        tiers
            .iter()
            .find_map(|t| rules.iter().copied().find(|r| r.decision == *t && pred(r)))
    };
    let timeout = |was: Option<OnTimeout>, r: &Rule| match (was, r.on_timeout) {
        (Some(OnTimeout::Deny), _) | (_, Some(OnTimeout::Deny)) => Some(OnTimeout::Deny),
        (was, now) => now.or(was),
    };
    if matches!(action, Action::Shell(_)) && !a.segments.is_empty() {
        // Per simple command; a rule without program matchers applies to every segment.
        let mut ruling = Ruling {
            decision: Some(Decision::Allow),
            ..Ruling::default()
        };
        for seg in &a.segments {
            let rule = first(&|r: &Rule| r.matches_action(action) && r.matches_segment(seg));
            match rule {
                Some(r) => {
                    ruling.reasons.push(format!("`{}`: {}", seg.text, r.label()));
                    ruling.decision = stricter(ruling.decision, Some(r.decision));
                    ruling.on_timeout = timeout(ruling.on_timeout, r);
                }
                None => ruling.decision = stricter(ruling.decision, None),
            }
        }
        return ruling;
    }
    match first(&|r: &Rule| !r.shell_only() && r.matches_action(action)) {
        Some(r) => Ruling {
            decision: Some(r.decision),
            reasons: vec![r.label()],
            on_timeout: r.on_timeout,
        },
        None => Ruling::default(),
    }
}

/// Combines per-segment decisions: deny beats ask beats "no rule" beats allow.
fn stricter(a: Option<Decision>, b: Option<Decision>) -> Option<Decision> {
    let rank = |d: Option<Decision>| match d {
        Some(Decision::Deny) => 3,
        Some(Decision::Ask) => 2,
        None => 1,
        Some(Decision::Allow) => 0,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}
