//! The policy (step 2 of the protocol). Risk is decided here, by the harness, never by the model: a
//! deterministic assessment of the action (protected paths, the parsed shell command, the network
//! target, hidden characters) and then the rules, evaluated deny → ask → allow. High risk is always
//! reviewed; anything not understood is high. Every decision carries plain-language reasons.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;


use crate::text;
use crate::action::Action;

#[cfg(any(test, feature = "internals"))]
pub mod corpus;
pub mod credentials;
pub mod mcp;
pub mod network;
pub mod programs;
pub mod protected;
pub mod rules;
pub mod shell;
pub mod staging;
pub mod verdict;

pub use protected::Protected;
pub use verdict::{Decision, Risk, Verdict};
pub use rules::{OnTimeout, PolicyError, RuleSet};

#[cfg(test)]
mod tests;

/// What the policy may look at besides the action itself.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// The workspace root (canonical).
    pub root: &'a Path,
    /// For `http.fetch`: the addresses the host resolved to (empty when not resolved).
    pub resolved: &'a [IpAddr],
}

pub trait Policy: Send + Sync {
    fn classify(&self, action: &Action, cx: &Context<'_>) -> Verdict;
    /// Recorded with each decision, so a change of policy is visible later.
    fn version(&self) -> String;
    /// How long a review may wait before it expires (and fails closed).
    fn review_timeout_ms(&self) -> i64 {
        rules::DEFAULT_EXPIRE_SECS * 1000
    }
    /// What a new run may spend where neither it nor the Settings say (`[budget]`).
    fn budget(&self) -> crate::budget::Budget {
        crate::budget::Budget::default()
    }
    /// What a review becomes at its timeout where no rule says.
    fn on_timeout(&self) -> OnTimeout {
        OnTimeout::default()
    }
    /// `[telemetry]` in the person's own policy file, and that file (the export's last source).
    fn telemetry(&self) -> Option<(toml::Table, std::path::PathBuf)> {
        None
    }
    /// The paths this policy protects (for previews and grants).
    fn protected(&self) -> &Protected {
        &NO_PROTECTED
    }
    /// What happens to commands where the kernel cannot confine them (the person's choice).
    fn unconfined_commands(&self) -> rules::Unconfined {
        rules::Unconfined::Review
    }
    /// The programs the person switched confinement off for (their own policy file only).
    fn unconfined_programs(&self) -> Vec<String> {
        Vec::new()
    }
    /// Which commands are never, or always, staged (`[staging]`, their own policy file only).
    fn staging(&self) -> staging::Staging {
        staging::Staging::default()
    }
}

/// Why a command runs outside its default confinement, if it does: it asks for the network or to
/// run unconfined, or one of its `segments` runs a program the person switched confinement off
/// for (`switched`).
pub fn escape(
    cmd: &crate::action::ShellCommand,
    segments: &[shell::Segment],
    switched: &[String],
) -> Option<String> {
    use crate::action::shell::Sandbox;
    let off: Vec<&str> = segments
        .iter()
        .filter_map(|s| s.program.as_deref())
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .filter(|p| switched.iter().any(|s| s == p))
        .collect();
    match cmd.sandbox {
        Sandbox::Network => Some("it runs with the network, which reaches any host".into()),
        Sandbox::Unconfined => Some("it runs unconfined: nothing but this review holds it".into()),
        Sandbox::Confined if !off.is_empty() => Some(format!(
            "it runs unconfined: your policy switches confinement off for {}",
            off.join(", ")
        )),
        Sandbox::Confined => None,
    }
}

static NO_PROTECTED: Protected = Protected::NONE;

/// Allows everything. For tests of the machinery around the policy only.
#[cfg(any(test, feature = "internals"))]
#[derive(Clone, Copy, Debug, Default)]
pub struct PermitAll;

#[cfg(any(test, feature = "internals"))]
impl Policy for PermitAll {
    fn classify(&self, action: &Action, _cx: &Context<'_>) -> Verdict {
        Verdict {
            on_timeout: None,
            risk: Risk::Low,
            decision: Decision::Allow,
            reasons: vec![format!("{}: allowed (test policy)", action.tool())],
            segments: Vec::new(),
        }
    }

    fn version(&self) -> String {
        "permit-all/1".into()
    }

    fn unconfined_commands(&self) -> rules::Unconfined {
        rules::Unconfined::Allow
    }
}

/// The harness' own judgement of an action, before any rule.
#[derive(Clone, Debug)]
pub struct Assessment {
    pub risk: Risk,
    pub reasons: Vec<String>,
    /// The action must not run at all (a metadata address, a `file://` URL).
    pub forbidden: bool,
    pub segments: Vec<shell::Segment>,
}

impl Assessment {
    fn new() -> Self {
        Self {
            risk: Risk::Low,
            reasons: Vec::new(),
            forbidden: false,
            segments: Vec::new(),
        }
    }

    pub fn raise(&mut self, risk: Risk, reason: String) {
        self.risk = self.risk.max(risk);
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
    }
}

/// Assesses an action: protected paths, hidden characters, the parsed command, the network target.
pub fn assess(action: &Action, cx: &Context<'_>, protected: &Protected) -> Assessment {
    let mut a = Assessment::new();
    for path in action.paths() {
        if let Some(why) = protected.why(cx.root, path.as_str()) {
            a.raise(Risk::High, why);
        }
        if let Some(why) = text::invisible_reason(&format!("the path {path}"), path.as_str()) {
            a.raise(Risk::High, why);
        }
    }
    match action {
        Action::Read { path } => {
            if a.reasons.is_empty() {
                a.reasons.push(format!("reads {path} inside the workspace"));
            }
        }
        Action::List { path, .. } | Action::Search { path, .. } => {
            if a.reasons.is_empty() {
                a.reasons.push(format!(
                    "looks at {path} inside the workspace; changes nothing"
                ));
            }
        }
        Action::Write { path, content } => {
            if let Some(why) = text::invisible_reason("the new content", content) {
                a.raise(Risk::High, why);
            }
            a.raise(Risk::Medium, format!("writes {path}"));
        }
        Action::Edit { path, new, .. } => {
            if let Some(why) = text::invisible_reason("the replacement text", new) {
                a.raise(Risk::High, why);
            }
            a.raise(Risk::Medium, format!("edits {path}"));
        }
        Action::Delete { path } => a.raise(Risk::Medium, format!("deletes {path}")),
        Action::Move { from, to } => a.raise(Risk::Medium, format!("moves {from} to {to}")),
        Action::Shell(cmd) => {
            let place = shell::Place {
                root: cx.root,
                protected,
            };
            let analysis = cmd.analyse(place);
            if analysis.risk == Risk::Low && analysis.all_reasons().is_empty() {
                a.raise(Risk::Low, "runs only commands that read".into());
            }
            for r in analysis.all_reasons() {
                a.raise(analysis.risk, r);
            }
            a.risk = a.risk.max(analysis.risk);
            a.segments = analysis.segments;
        }
        Action::Fetch(req) => network::assess(req, cx.resolved, &mut a),
        Action::Permission(p) => match p.implied.as_deref() {
            Some(inner) => {
                let mut inner = assess(inner, cx, protected);
                inner.reasons.insert(0, p.describe());
                return inner;
            }
            None if p.recall => a.raise(Risk::Low, p.describe()),
            None => {
                a.raise(Risk::High, p.describe());
                a.raise(
                    Risk::High,
                    p.unread
                        .clone()
                        .unwrap_or_else(|| "Reins cannot read what the agent reports".into()),
                );
            }
        },
        Action::Mcp(call) => mcp::assess(call, cx, protected, &mut a),
        Action::Remember(r) => {
            if let Some(why) = text::invisible_reason("the fact", &r.value) {
                a.raise(Risk::High, why);
            }
            a.raise(
                Risk::Low,
                format!(
                    "proposes a profile fact ({}): memory keeps it only in its categories and above its threshold, never a secret",
                    r.category
                ),
            );
        }
    }
    a
}

/// Why a search an agent carries out itself is high: it reads files Reins' own search skips.
fn own_search(inner: &Action, cx: &Context<'_>, protected: &Protected) -> Option<String> {
    let Action::Search { path, .. } = inner else {
        return None;
    };
    protected
        .secrets_within(cx.root, path.as_str())
        .map(|why| format!("the agent searches {path} itself, and {why}"))
}

/// The policy Reins runs with: the built-in assessment, then the user's rules, then the workspace's
/// rules (which may only tighten).
#[derive(Debug)]
pub struct RulePolicy {
    protected: Protected,
    /// The user's rules in force: the file's last good reading (a broken file keeps them).
    user: std::sync::RwLock<Arc<RuleSet>>,
    /// Where they come from, and why the file's current text is not in force (None: it is).
    file: Option<std::path::PathBuf>,
    broken: std::sync::RwLock<Option<String>>,
}

use crate::input_file::{self, InputError, Links};

/// The rules of the user's policy file; none when it does not exist.
fn read_rules(user_file: &Path) -> Result<RuleSet, PolicyError> {
    match input_file::read(user_file, Links::Follow) {
        Ok(text) => RuleSet::parse(&text, &user_file.display().to_string()),
        Err(InputError::NotFound) => Ok(RuleSet::default()),
        Err(e) => Err(PolicyError::Read {
            path: user_file.display().to_string(),
            detail: e.to_string(),
        }),
    }
}

/// Where a workspace keeps its own (tighten-only) policy.
pub const WORKSPACE_POLICY: &str = ".reins/policy.toml";

impl RulePolicy {
    /// The built-in defaults plus the user's policy file, if it exists. A file that exists but does
    /// not parse is an error: a policy is never silently ignored.
    pub fn load(user_file: &Path, protected: Protected) -> Result<Self, PolicyError> {
        let user = read_rules(user_file)?;
        Ok(Self {
            protected,
            user: std::sync::RwLock::new(Arc::new(user)),
            file: Some(user_file.to_owned()),
            broken: std::sync::RwLock::new(None),
        })
    }

    #[cfg(test)]
    pub fn defaults(protected: Protected) -> Self {
        Self::with_rules(protected, RuleSet::default())
    }

    #[cfg(test)]
    pub fn with_rules(protected: Protected, user: RuleSet) -> Self {
        Self {
            protected,
            user: std::sync::RwLock::new(Arc::new(user)),
            file: None,
            broken: std::sync::RwLock::new(None),
        }
    }

    /// The user's rules in force now.
    pub fn user_rules(&self) -> Arc<RuleSet> {
        Arc::clone(&self.user.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Why the file's current text is not in force (it did not parse or could not be read): the
    /// last good rules stay. None when the file is in force.
    pub fn broken(&self) -> Option<String> {
        self.broken.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reads the policy file again: its rules are in force from the next decision on. A file that
    /// does not parse changes nothing: the last good rules stay, and `broken` says why.
    pub fn reload(&self) -> Result<(), PolicyError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let result = read_rules(file);
        let mut broken = self.broken.write().unwrap_or_else(|e| e.into_inner());
        match result {
            Ok(rules) => {
                *self.user.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(rules);
                *broken = None;
                Ok(())
            }
            Err(e) => {
                *broken = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// The workspace's own rules: only deny and ask count. A file that cannot be read fails closed.
    fn workspace_rules(&self, root: &Path) -> Result<Option<RuleSet>, String> {
        let path = root.join(WORKSPACE_POLICY);
        match input_file::read(&path, Links::Refuse) {
            Ok(text) => RuleSet::parse(&text, WORKSPACE_POLICY)
                .map(|r| Some(r.tighten_only()))
                .map_err(|e| e.to_string()),
            Err(InputError::NotFound) => Ok(None),
            Err(e) => Err(format!("{WORKSPACE_POLICY} {e}")),
        }
    }
}

impl RulePolicy {
    /// An external agent's permission request is judged as the action it reports, by the same
    /// classifier and rules; a report Reins cannot read is high risk and always asks.
    fn judge_reported(&self, p: &crate::action::Permission, cx: &Context<'_>) -> Verdict {
        match p.implied.as_deref() {
            Some(inner) => {
                let mut v = self.judge(inner, cx);
                v.reasons.insert(
                    0,
                    format!("{}, judged as Reins' own {}", p.describe(), inner.tool()),
                );
                if let Some(why) = own_search(inner, cx, &self.protected) {
                    v.risk = Risk::High;
                    if v.decision == Decision::Allow {
                        v.decision = Decision::Ask;
                    }
                    v.reasons.push(why);
                }
                v
            }
            None => Verdict {
                on_timeout: None,
                risk: Risk::High,
                decision: Decision::Ask,
                reasons: vec![
                    p.describe(),
                    p.unread.clone().unwrap_or_default(),
                    "anything Reins does not understand is high risk".into(),
                ],
                segments: Vec::new(),
            },
        }
    }
}

impl Policy for RulePolicy {
    /// The verdict, with every secret in its reasons and segments masked: they quote the command
    /// and are stored, shown and logged (the action itself is what runs).
    fn classify(&self, action: &Action, cx: &Context<'_>) -> Verdict {
        let mut v = self.judge(action, cx);
        // Out of its sandbox, a command is the person's choice each time: high risk, asked.
        let shell = match action {
            Action::Shell(cmd) => Some(cmd),
            Action::Permission(p) => match p.implied.as_deref() {
                Some(Action::Shell(cmd)) => Some(cmd),
                _ => None,
            },
            _ => None,
        };
        if let Some(cmd) = shell {
            if let Some(why) = escape(cmd, &v.segments, self.user_rules().unconfined_programs()) {
                v.risk = Risk::High;
                if v.decision == Decision::Allow {
                    v.decision = Decision::Ask;
                }
                v.reasons.push(why);
            }
        }
        let mask = |s: &mut String| {
            if let std::borrow::Cow::Owned(clean) = crate::secrets::redact(s) {
                *s = clean;
            }
        };
        v.reasons.iter_mut().for_each(mask);
        for seg in &mut v.segments {
            // An argument is a secret by its context (`--password X`): judged in the whole text.
            for arg in &mut seg.args {
                if let std::borrow::Cow::Owned(clean) =
                    crate::secrets::redact_found_in(arg, &seg.text)
                {
                    *arg = clean;
                }
            }
            mask(&mut seg.text);
            seg.args.iter_mut().for_each(mask);
            seg.reasons.iter_mut().for_each(mask);
        }
        v
    }

    fn version(&self) -> String {
        format!("rules/1:{}", self.user_rules().digest().short())
    }

    fn review_timeout_ms(&self) -> i64 {
        self.user_rules().expire_after_secs() * 1000
    }

    fn on_timeout(&self) -> OnTimeout {
        self.user_rules().on_timeout()
    }
    fn budget(&self) -> crate::budget::Budget {
        self.user_rules().budget()
    }

    fn telemetry(&self) -> Option<(toml::Table, std::path::PathBuf)> {
        let table = self.user_rules().telemetry()?.clone();
        Some((table, self.file.clone()?))
    }

    fn unconfined_commands(&self) -> rules::Unconfined {
        self.user_rules().unconfined_commands()
    }

    fn unconfined_programs(&self) -> Vec<String> {
        self.user_rules().unconfined_programs().to_vec()
    }

    fn staging(&self) -> staging::Staging {
        self.user_rules().staging().clone()
    }

    fn protected(&self) -> &Protected {
        &self.protected
    }
}

impl RulePolicy {
    fn judge(&self, action: &Action, cx: &Context<'_>) -> Verdict {
        if let Action::Permission(p) = action {
            // A recall from Reins' own memory server is low, and allowed unless a rule of the
            // person's or the workspace's asks or denies; everything else reported is judged as
            // what it reports.
            if !(p.recall && p.implied.is_none()) {
                return self.judge_reported(p, cx);
            }
        }
        let a = assess(action, cx, &self.protected);
        let mut reasons = a.reasons.clone();
        if a.forbidden {
            return Verdict {
                on_timeout: None,
                risk: Risk::High,
                decision: Decision::Deny,
                reasons,
                segments: a.segments,
            };
        }
        let ws = match self.workspace_rules(cx.root) {
            Ok(ws) => ws,
            Err(e) => {
                reasons.push(format!(
                    "the workspace policy {WORKSPACE_POLICY} cannot be read ({e}); every action needs review until it is fixed"
                ));
                return Verdict {
                    on_timeout: None,
                    risk: a.risk.max(Risk::Medium),
                    decision: Decision::Ask,
                    reasons,
                    segments: a.segments,
                };
            }
        };
        let user = self.user_rules();
        let sets: Vec<&RuleSet> = std::iter::once(user.as_ref()).chain(ws.as_ref()).collect();
        let ruling = rules::decide(&sets, action, &a);
        reasons.extend(ruling.reasons);
        let pure = action.effect_class() == crate::journal::EffectClass::Pure;
        let decision = match ruling.decision {
            Some(Decision::Deny) => Decision::Deny,
            Some(Decision::Ask) => Decision::Ask,
            Some(Decision::Allow) if a.risk == Risk::High => {
                reasons.push("high risk is always reviewed, whatever the rules allow".into());
                Decision::Ask
            }
            Some(Decision::Allow) => Decision::Allow,
            None if pure && a.risk == Risk::Low => Decision::Allow,
            // Memory's own limits decide what is kept (a rule may still ask or deny).
            None if matches!(action, Action::Remember(_)) && a.risk == Risk::Low => Decision::Allow,
            // Reins' memory server answers only what memory allows, and audits every call.
            None if matches!(action, Action::Permission(p) if p.recall) && a.risk == Risk::Low => {
                reasons.push("Reins' memory server answers only the facts memory allows (none when it is off) and audits every call".into());
                Decision::Allow
            }
            None if pure => Decision::Ask,
            None => {
                reasons.push("every action that changes something is reviewed unless a rule or grant allows it".into());
                Decision::Ask
            }
        };
        Verdict {
            on_timeout: ruling.on_timeout,
            risk: a.risk,
            decision,
            reasons,
            segments: a.segments,
        }
    }
}
