//! The script agent: runs a plan file (TOML) — a list of tool calls with optional expectations. For
//! demos, runbooks and tests.
//!
//! ```toml
//! name = "Fix log rotation"
//! goal = "Find why the disk fills up and fix config/logrotate.conf"
//! [[steps]]
//! tool = "fs.read"
//! args = { path = "logs/app.log" }
//! [[steps]]
//! tool = "fs.write"
//! why  = "rotate daily and keep 7 files so the disk stops filling"
//! args = { path = "config/logrotate.conf", content = "..." }
//! expect = "ok"                 # ok (default) | error | any
//! expect_output = "created"     # optional: the result must contain this text
//! ```

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{Agent, AgentError, Move, Observation};
use crate::progress::Observer;
use crate::digest::Digest;
use crate::action::ToolCall;

pub const KIND: &str = "script";
pub const VERSION: &str = "1";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    #[default]
    Ok,
    Error,
    Any,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    pub tool: String,
    #[serde(default)]
    pub args: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    #[serde(default)]
    pub expect: Expect,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_output: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub name: String,
    pub goal: String,
    #[serde(default)]
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// Parses a plan file; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, AgentError> {
        let plan: Plan = toml::from_str(text).map_err(|e| AgentError::Plan {
            origin: origin.to_owned(),
            detail: e.to_string(),
        })?;
        plan.check(origin)?;
        Ok(plan)
    }

    pub fn from_json(text: &str) -> Result<Self, AgentError> {
        serde_json::from_str(text).map_err(|e| AgentError::Plan {
            origin: "(stored)".into(),
            detail: e.to_string(),
        })
    }

    fn check(&self, origin: &str) -> Result<(), AgentError> {
        let bad = |detail: String| AgentError::Plan {
            origin: origin.to_owned(),
            detail,
        };
        if self.name.trim().is_empty() {
            return Err(bad("`name` must not be empty".into()));
        }
        if self.goal.trim().is_empty() {
            return Err(bad("`goal` must not be empty".into()));
        }
        for (i, step) in self.steps.iter().enumerate() {
            if !(step.args.is_object() || step.args.is_null()) {
                return Err(bad(format!("step {}: `args` must be a table", i + 1)));
            }
        }
        Ok(())
    }

    /// Canonical JSON: what the run stores and hashes.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A run of this plan, as it is created.
    pub fn new_run(&self) -> super::NewRun {
        super::NewRun {
            kind: KIND,
            version: VERSION,
            name: self.name.clone(),
            goal: self.goal.clone(),
            spec: self.to_json(),
            keys: Vec::new(),
        }
    }

    pub fn hash(&self) -> Digest {
        let value = serde_json::to_value(self).unwrap_or_default();
        Digest::of(crate::digest::canonical_json(&value).as_bytes())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct State {
    /// Index of the next step to propose.
    next: usize,
    /// Set when an expectation was not met.
    failure: Option<String>,
}

pub struct ScriptAgent {
    plan: Plan,
    state: State,
}

impl ScriptAgent {
    pub fn new(plan: Plan) -> Self {
        Self {
            plan,
            state: State::default(),
        }
    }
}

#[async_trait]
impl Agent for ScriptAgent {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    async fn next(&mut self, _obs: &dyn Observer) -> Result<Move, AgentError> {
        if let Some(reason) = &self.state.failure {
            return Ok(Move::Fail {
                reason: reason.clone(),
            });
        }
        match self.plan.steps.get(self.state.next) {
            Some(step) => {
                self.state.next += 1;
                Ok(Move::Call {
                    call: ToolCall {
                        tool: step.tool.clone(),
                        args: step.args.clone(),
                    },
                    why: step.why.clone(),
                })
            }
            None => Ok(Move::Finish {
                summary: format!(
                    "plan {:?} completed: {} steps",
                    self.plan.name,
                    self.plan.steps.len()
                ),
            }),
        }
    }

    fn observe(&mut self, obs: &Observation) {
        let Some(step) = self
            .state
            .next
            .checked_sub(1)
            .and_then(|i| self.plan.steps.get(i))
        else {
            return;
        };
        let n = self.state.next;
        let first_line = obs.output.lines().next().unwrap_or("").to_owned();
        let failure = match (step.expect, obs.ok) {
            (Expect::Ok, false) => Some(format!("step {n} ({}) failed: {first_line}", step.tool)),
            (Expect::Error, true) => Some(format!(
                "step {n} ({}) was expected to fail but succeeded",
                step.tool
            )),
            _ => None,
        };
        let failure = failure.or_else(|| {
            step.expect_output
                .as_ref()
                .filter(|want| !obs.output.contains(want.as_str()))
                .map(|want| format!("step {n} ({}): output does not contain {want:?}", step.tool))
        });
        if failure.is_some() {
            self.state.failure = failure;
        }
    }

    fn state(&self) -> serde_json::Value {
        serde_json::to_value(&self.state).unwrap_or_default()
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<(), AgentError> {
        if state.is_null() {
            self.state = State::default();
            return Ok(());
        }
        let restored: State =
            serde_json::from_value(state.clone()).map_err(|e| AgentError::State(e.to_string()))?;
        if restored.next > self.plan.steps.len() {
            return Err(AgentError::State(format!(
                "checkpoint is at step {} but the plan has {} steps",
                restored.next,
                self.plan.steps.len()
            )));
        }
        self.state = restored;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"
name = "t"
goal = "g"
[[steps]]
tool = "fs.read"
args = { path = "a" }
[[steps]]
tool = "fs.write"
why = "because"
args = { path = "b", content = "x" }
expect_output = "created"
"#;

    #[tokio::test]
    async fn proposes_in_order_and_survives_a_restore() -> anyhow::Result<()> {
        let plan = Plan::from_toml(PLAN, "t.toml")?;
        let mut a = ScriptAgent::new(plan.clone());
        assert!(matches!(a.next(&crate::progress::Silent).await?, Move::Call { ref call, .. } if call.tool == "fs.read"));
        a.observe(&Observation {
            seq: 1,
            tool: "fs.read".into(),
            ok: true,
            output: "hi".into(),
            ran: None,
            artifact: None,
        });
        let saved = a.state();

        let mut b = ScriptAgent::new(Plan::from_json(&plan.to_json())?);
        b.restore(&saved)?;
        assert!(
            matches!(b.next(&crate::progress::Silent).await?, Move::Call { ref why, .. } if why.as_deref() == Some("because"))
        );
        b.observe(&Observation {
            seq: 2,
            tool: "fs.write".into(),
            ok: true,
            output: "replaced b".into(),
            ran: None,
            artifact: None,
        });
        assert!(
            matches!(b.next(&crate::progress::Silent).await?, Move::Fail { ref reason } if reason.contains("\"created\""))
        );
        Ok(())
    }

    #[test]
    fn bad_plans_say_where() {
        let err = Plan::from_toml(
            "name = \"x\"\ngoal = \"g\"\n[[steps]]\ntool = 3\n",
            "p.toml",
        )
        .err();
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.starts_with("plan p.toml:") && text.contains("line 4"),
            "{text}"
        );
        let unknown = Plan::from_toml("name = \"x\"\ngoal = \"g\"\ncolour = 1\n", "p.toml");
        assert!(
            unknown.is_err(),
            "unknown keys are typos, not silently ignored"
        );
    }
}
