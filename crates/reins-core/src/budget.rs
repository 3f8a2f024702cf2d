//! A run's budget: how many tokens, how much money (at the price the run was given, or as the
//! agent reports it), how much working time and how many steps it may spend before it pauses and
//! asks. Reaching a limit never kills a run: it pauses at its next safe point, and a person allows
//! more or stops it there.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Limits; an absent one is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "BudgetLimits")]
pub struct Budget {
    /// Model tokens, in and out.
    pub tokens: Option<u64>,
    /// US dollars.
    pub cost_usd: Option<f64>,
    /// Seconds the run has been driven (time spent waiting for people does not count).
    pub wall_secs: Option<u64>,
    /// Tool calls and questions: the steps the agent proposed.
    pub steps: Option<u64>,
}

/// What a run has spent so far, on each of the budget's measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "BudgetSpent")]
pub struct Spent {
    pub tokens: u64,
    pub cost_usd: f64,
    pub wall_secs: u64,
    pub steps: u64,
}

/// One of a budget's measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "BudgetMeasure")]
pub enum Measure {
    Tokens,
    Cost,
    Wall,
    Steps,
}

impl Measure {
    pub const ALL: [Measure; 4] = [Measure::Tokens, Measure::Cost, Measure::Wall, Measure::Steps];

    pub fn as_str(self) -> &'static str {
        match self {
            Measure::Tokens => "tokens",
            Measure::Cost => "cost",
            Measure::Wall => "wall",
            Measure::Steps => "steps",
        }
    }

    /// An amount of this measure as people read it: "12,000 tokens", "$0.50", "15m", "40 steps".
    pub fn amount(self, v: f64) -> String {
        match self {
            Measure::Tokens => format!("{} tokens", thousands(v as u64)),
            Measure::Cost => format!("${v:.2}"),
            Measure::Wall => minutes(v as u64),
            Measure::Steps => format!("{} steps", thousands(v as u64)),
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Measure {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Measure::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a budget measure: tokens, cost, wall or steps"))
    }
}

/// A limit the run reached: which, the limit, and what it had spent.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "BudgetReached")]
pub struct Reached {
    pub measure: Measure,
    pub limit: f64,
    pub spent: f64,
}

impl Reached {
    /// "it spent 12,000 tokens of its 10,000 tokens".
    pub fn sentence(&self) -> String {
        format!(
            "it spent {} of a budget of {}",
            self.measure.amount(self.spent),
            self.measure.amount(self.limit)
        )
    }
}

impl Budget {
    pub fn is_empty(&self) -> bool {
        *self == Budget::default()
    }

    /// The limit on `m`, if any.
    pub fn limit(&self, m: Measure) -> Option<f64> {
        match m {
            Measure::Tokens => self.tokens.map(|v| v as f64),
            Measure::Cost => self.cost_usd,
            Measure::Wall => self.wall_secs.map(|v| v as f64),
            Measure::Steps => self.steps.map(|v| v as f64),
        }
    }

    /// Each limit this one leaves out, taken from `fallback`.
    pub fn or(self, fallback: Budget) -> Budget {
        Budget {
            tokens: self.tokens.or(fallback.tokens),
            cost_usd: self.cost_usd.or(fallback.cost_usd),
            wall_secs: self.wall_secs.or(fallback.wall_secs),
            steps: self.steps.or(fallback.steps),
        }
    }

    /// Every limit must be above zero (a zero budget would pause a run before it began); a cost
    /// must be a number.
    pub fn check(&self) -> Result<(), String> {
        let zero = |m: Measure| format!("a {m} budget must be above zero");
        if self.tokens == Some(0) {
            return Err(zero(Measure::Tokens));
        }
        if self.wall_secs == Some(0) {
            return Err(zero(Measure::Wall));
        }
        if self.steps == Some(0) {
            return Err(zero(Measure::Steps));
        }
        if let Some(c) = self.cost_usd {
            if !c.is_finite() || c <= 0.0 {
                return Err(zero(Measure::Cost));
            }
        }
        Ok(())
    }

    /// The first limit `spent` has reached, in the order tokens, cost, wall time, steps.
    pub fn reached(&self, spent: &Spent) -> Option<Reached> {
        Measure::ALL.into_iter().find_map(|m| {
            let limit = self.limit(m)?;
            let spent = spent.of(m);
            (spent >= limit).then_some(Reached {
                measure: m,
                limit,
                spent,
            })
        })
    }

    /// This budget with `m` allowed `more` beyond what was spent or the old limit, whichever is
    /// higher: "allow N more" always lets the run go on for N.
    pub fn raised(mut self, m: Measure, more: f64, spent: &Spent) -> Result<Budget, String> {
        if !more.is_finite() || more <= 0.0 {
            return Err(format!("allow more {m}: the amount must be above zero"));
        }
        let base = self.limit(m).unwrap_or(0.0).max(spent.of(m));
        let to = base + more;
        match m {
            Measure::Tokens => self.tokens = Some(to.ceil() as u64),
            Measure::Cost => self.cost_usd = Some(to),
            Measure::Wall => self.wall_secs = Some(to.ceil() as u64),
            Measure::Steps => self.steps = Some(to.ceil() as u64),
        }
        Ok(self)
    }
}

/// `[budget]` in `policy.toml`: the default every new run gets, where neither the run nor the
/// Settings say.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetToml {
    tokens: Option<u64>,
    cost_usd: Option<f64>,
    wall_minutes: Option<u64>,
    steps: Option<u64>,
}

impl BudgetToml {
    pub fn budget(&self) -> Result<Budget, String> {
        let b = Budget {
            tokens: self.tokens,
            cost_usd: self.cost_usd,
            wall_secs: self.wall_minutes.map(|m| m.saturating_mul(60)),
            steps: self.steps,
        };
        b.check().map_err(|e| format!("[budget]: {e}"))?;
        Ok(b)
    }
}

impl Spent {
    pub fn of(&self, m: Measure) -> f64 {
        match m {
            Measure::Tokens => self.tokens as f64,
            Measure::Cost => self.cost_usd,
            Measure::Wall => self.wall_secs as f64,
            Measure::Steps => self.steps as f64,
        }
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn minutes(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_limit_reached_is_named_with_what_was_spent() {
        let b = Budget {
            tokens: Some(10_000),
            steps: Some(5),
            ..Budget::default()
        };
        let mut spent = Spent {
            tokens: 9_999,
            steps: 4,
            ..Spent::default()
        };
        assert_eq!(b.reached(&spent), None);
        spent.steps = 5;
        let r = b.reached(&spent).expect("steps reached");
        assert_eq!(r.measure, Measure::Steps);
        spent.tokens = 12_000;
        let r = b.reached(&spent).expect("tokens reached");
        assert_eq!(r.measure, Measure::Tokens);
        assert_eq!(
            r.sentence(),
            "it spent 12,000 tokens of a budget of 10,000 tokens"
        );
    }

    #[test]
    fn allowing_more_counts_from_what_was_spent() {
        let b = Budget {
            tokens: Some(10_000),
            ..Budget::default()
        };
        let spent = Spent {
            tokens: 12_000,
            ..Spent::default()
        };
        let raised = b.raised(Measure::Tokens, 5_000.0, &spent).expect("raised");
        assert_eq!(raised.tokens, Some(17_000));
        assert!(raised.reached(&spent).is_none());
        assert!(b.raised(Measure::Tokens, 0.0, &spent).is_err());
        assert!(b.raised(Measure::Cost, f64::NAN, &spent).is_err());
    }

    #[test]
    fn a_zero_or_negative_limit_is_refused() {
        for bad in [
            Budget { tokens: Some(0), ..Budget::default() },
            Budget { cost_usd: Some(-1.0), ..Budget::default() },
            Budget { cost_usd: Some(f64::INFINITY), ..Budget::default() },
            Budget { wall_secs: Some(0), ..Budget::default() },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
        assert!(Budget::default().check().is_ok());
    }
}
