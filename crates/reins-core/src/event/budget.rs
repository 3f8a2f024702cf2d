//! The payloads of a run's budget: what it was given, when it reached a limit and paused, and
//! what a person allowed after that.

use serde::{Deserialize, Serialize};

use crate::budget::{Budget, Measure, Reached, Spent};

/// The run was given a budget (when it was created).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetSet {
    pub limits: Budget,
}

/// The run reached a limit and paused at a safe point (its checkpoint verified).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetReached {
    pub reached: Reached,
    pub spent: Spent,
    pub checkpoint: i64,
}

/// A person allowed the run more of one measure.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRaised {
    pub measure: Measure,
    pub from: Option<f64>,
    pub to: f64,
    pub by: String,
}

/// How a budget reads: "10,000 tokens, $1.00, 30m00s, 50 steps".
pub fn limits_words(b: &Budget) -> String {
    let parts: Vec<String> = Measure::ALL
        .into_iter()
        .filter_map(|m| b.limit(m).map(|v| m.amount(v)))
        .collect();
    if parts.is_empty() {
        "no limits".into()
    } else {
        parts.join(", ")
    }
}

impl BudgetSet {
    pub fn sentence(&self) -> String {
        format!(
            "The run may spend {} before it pauses and asks",
            limits_words(&self.limits)
        )
    }
}

impl BudgetReached {
    pub fn sentence(&self) -> String {
        format!(
            "The run reached its budget and paused at checkpoint {}: {}",
            self.checkpoint,
            self.reached.sentence()
        )
    }
}

impl BudgetRaised {
    pub fn sentence(&self) -> String {
        format!(
            "{} allowed the run more {}: up to {}",
            self.by,
            self.measure,
            self.measure.amount(self.to)
        )
    }
}
