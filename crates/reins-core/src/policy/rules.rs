//! Policy rules from TOML. Each rule has a decision and matchers (tool, paths, program + argument
//! patterns, hosts); all given matchers must match. Rules are evaluated deny → ask → allow: the first
//! tier with a matching rule decides. A shell command is decided per simple command and the strictest
//! wins, so allowing `echo` never allows `echo hi; rm -rf x`.
//!
//! ```toml
//! [review]
//! expire_after_secs = 86400      # a pending review expires (fails closed) after this long
//!
//! [[rules]]
//! decision = "allow"             # allow | ask | deny
//! tool = "shell.exec"            # a glob over tool names: "fs.*"
//! program = "cargo"              # shell only: the program's base name
//! args = ["test"]                # shell only: globs matched against the first arguments
//! reason = "tests are how we check work"
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
//! ```

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

use super::{Assessment, Decision};
use crate::digest::Digest;
use crate::tools::Action;

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
    rules: Vec<RuleText>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Review {
    expire_after_secs: Option<i64>,
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
    reason: Option<String>,
    origin: String,
}

#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    rules: Vec<Rule>,
    expire_after_secs: Option<i64>,
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
            rules.push(Rule {
                n: i + 1,
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
        Ok(Self {
            rules,
            expire_after_secs: file.review.and_then(|r| r.expire_after_secs),
            digest: Some(Digest::of(text.as_bytes())),
        })
    }

    /// Keeps only the rules that can make a decision stricter.
    pub fn tighten_only(mut self) -> Self {
        self.rules.retain(|r| r.decision != Decision::Allow);
        self.expire_after_secs = None;
        self
    }

    pub fn digest(&self) -> Digest {
        self.digest.clone().unwrap_or_else(|| Digest::of(b""))
    }

    pub fn expire_after_secs(&self) -> i64 {
        self.expire_after_secs.unwrap_or(DEFAULT_EXPIRE_SECS)
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

/// The decision of the rules for an action, with the reasons (None: no rule matched).
pub fn decide(
    sets: &[&RuleSet],
    action: &Action,
    a: &Assessment,
) -> (Option<Decision>, Vec<String>) {
    let tiers = [Decision::Deny, Decision::Ask, Decision::Allow];
    let rules: Vec<&Rule> = sets.iter().flat_map(|s| s.rules.iter()).collect();
    let first = |pred: &dyn Fn(&Rule) -> bool| -> Option<&Rule> {
        tiers
            .iter()
            .find_map(|t| rules.iter().copied().find(|r| r.decision == *t && pred(r)))
    };
    if matches!(action, Action::Shell(_)) && !a.segments.is_empty() {
        // Per simple command; a rule without program matchers applies to every segment.
        let mut worst: Option<Decision> = Some(Decision::Allow);
        let mut reasons = Vec::new();
        for seg in &a.segments {
            let rule = first(&|r: &Rule| r.matches_action(action) && r.matches_segment(seg));
            match rule {
                Some(r) => {
                    reasons.push(format!("`{}`: {}", seg.text, r.label()));
                    worst = stricter(worst, Some(r.decision));
                }
                None => worst = stricter(worst, None),
            }
        }
        return (worst, reasons);
    }
    match first(&|r: &Rule| !r.shell_only() && r.matches_action(action)) {
        Some(r) => (Some(r.decision), vec![r.label()]),
        None => (None, Vec::new()),
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
