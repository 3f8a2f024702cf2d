//! `reins budget`: what a run may spend and has spent; at its limit, allow more or stop it there;
//! and the default budget new runs get.

use reins_core::api::{budget_words, Budget, BudgetMeasure, BudgetView, Reins, RunId};

use crate::exit;
use crate::output::print_json;

#[derive(clap::Subcommand)]
pub enum BudgetCommand {
    /// What a run may spend, what it has spent, and whether it waits at a limit.
    Show {
        /// The run id, or a unique prefix of it.
        run: String,
    },
    /// Allow a run more: `tokens=20000`, `cost=0.50` (US dollars), `wall=30m` (or `90s`, `2h`),
    /// `steps=50`. Counted from what it spent, so it goes on for that much. A run paused at its
    /// budget is queued again.
    Allow {
        /// The run id, or a unique prefix of it.
        run: String,
        /// MEASURE=AMOUNT.
        more: String,
    },
    /// Stop a run paused at its budget where it is (it is cancelled; its files stay as they are).
    Stop {
        /// The run id, or a unique prefix of it.
        run: String,
    },
    /// Show or set the budget every new run gets where it names none (`[budget]` in policy.toml
    /// fills in what this leaves out).
    Default {
        #[command(flatten)]
        limits: Limits,
        /// Remove the default.
        #[arg(long, conflicts_with_all = ["tokens", "cost", "minutes", "steps"])]
        clear: bool,
    },
}

/// Budget limits given on the command line.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Limits {
    /// Model tokens, in and out.
    #[arg(long, value_name = "N")]
    pub tokens: Option<u64>,
    /// US dollars (at the price the run was given, or as its agent reports).
    #[arg(long, value_name = "USD")]
    pub cost: Option<f64>,
    /// Minutes the run is driven (time waiting for people does not count).
    #[arg(long, value_name = "MINUTES")]
    pub minutes: Option<u64>,
    /// Steps: tool calls and questions.
    #[arg(long, value_name = "N")]
    pub steps: Option<u64>,
}

impl Limits {
    pub fn budget(&self) -> Budget {
        Budget {
            tokens: self.tokens,
            cost_usd: self.cost,
            wall_secs: self.minutes.map(|m| m.saturating_mul(60)),
            steps: self.steps,
        }
    }

    fn is_empty(&self) -> bool {
        self.budget().is_empty()
    }
}

/// A run's own budget on `reins run`; what it leaves out comes from `reins budget default`, then
/// `[budget]` in policy.toml.
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Budget (the run pauses and asks when it reaches one)")]
pub struct RunBudget {
    /// Model tokens, in and out (the model calls of --llm, or what an agent reports).
    #[arg(long = "budget-tokens", value_name = "N")]
    pub tokens: Option<u64>,
    /// US dollars: at --price-in/--price-out for --llm, or as the agent reports its cost.
    #[arg(long = "budget-cost", value_name = "USD")]
    pub cost: Option<f64>,
    /// Minutes the run is driven (time waiting for people does not count).
    #[arg(long = "budget-minutes", value_name = "MINUTES")]
    pub minutes: Option<u64>,
    /// Steps: tool calls and questions.
    #[arg(long = "budget-steps", value_name = "N")]
    pub steps: Option<u64>,
}

impl RunBudget {
    pub fn budget(&self) -> Budget {
        Limits {
            tokens: self.tokens,
            cost: self.cost,
            minutes: self.minutes,
            steps: self.steps,
        }
        .budget()
    }
}

/// `MEASURE=AMOUNT` as `allow` takes it.
fn parse_more(text: &str) -> Result<(BudgetMeasure, f64), String> {
    let (m, v) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: say MEASURE=AMOUNT, as in tokens=20000"))?;
    let measure: BudgetMeasure = m.trim().parse()?;
    let v = v.trim();
    let bad = || format!("{text:?}: {v:?} is not an amount");
    let amount = match measure {
        BudgetMeasure::Wall => {
            let (n, unit) = v.split_at(v.find(|c: char| c.is_alphabetic()).unwrap_or(v.len()));
            let n: f64 = n.parse().map_err(|_| bad())?;
            match unit {
                "" | "m" => n * 60.0,
                "s" => n,
                "h" => n * 3600.0,
                _ => return Err(format!("{text:?}: a time is like 30m, 90s or 2h")),
            }
        }
        _ => v.replace('_', "").parse().map_err(|_| bad())?,
    };
    Ok((measure, amount))
}

pub async fn exec(reins: &Reins, cmd: BudgetCommand, json: bool) -> reins_core::api::Result<u8> {
    let person = reins_core::api::face::person(None);
    match cmd {
        BudgetCommand::Show { run } => {
            let id = reins.resolve_run(&run).await?;
            let view = reins.budget(id).await?;
            if json {
                print_json(&view);
            } else {
                print!("{}", lines(id, &view));
            }
        }
        BudgetCommand::Allow { run, more } => {
            let id = reins.resolve_run(&run).await?;
            let (measure, amount) = parse_more(&more).map_err(reins_core::api::Error::Invalid)?;
            let (view, resumed) = reins.allow_more(id, measure, amount, &person).await?;
            if json {
                print_json(&serde_json::json!({"budget": view, "resumed": resumed}));
            } else {
                print!("{}", lines(id, &view));
                match resumed {
                    Some(c) => println!(
                        "{}\n  a running `reins worker` (or the desktop app) picks it up; or run `reins worker --once`",
                        c.message
                    ),
                    None => println!("run {id} goes on within its new budget"),
                }
            }
        }
        BudgetCommand::Stop { run } => {
            let id = reins.resolve_run(&run).await?;
            let control = reins.stop_at_budget(id, &person).await?;
            if json {
                print_json(&control);
            } else {
                println!("{}", control.message);
            }
        }
        BudgetCommand::Default { limits, clear } => {
            let now = if clear || !limits.is_empty() {
                let mut new = if clear {
                    Budget::default()
                } else {
                    reins.default_budget().await?
                };
                let given = limits.budget();
                new = given.or(new);
                reins.set_default_budget(&new).await?
            } else {
                reins.default_budget().await?
            };
            let policy = reins.policy_budget();
            if json {
                print_json(
                    &serde_json::json!({"settings": now, "policy": policy, "newRuns": now.or(policy)}),
                );
            } else {
                println!("new runs may spend: {}", budget_words(&now.or(policy)));
                println!("  from the Settings: {}", budget_words(&now));
                println!("  from [budget] in policy.toml: {}", budget_words(&policy));
            }
        }
    }
    Ok(exit::DONE)
}

/// The budget as `reins budget show` and `reins show` print it.
pub fn lines(id: RunId, v: &BudgetView) -> String {
    if v.limits.is_empty() {
        return format!("budget: none (spent {})\n", spent_words(v));
    }
    let mut out = String::new();
    for m in BudgetMeasure::ALL {
        if let Some(limit) = v.limits.limit(m) {
            let spent = v.spent.of(m);
            let pct = if limit > 0.0 {
                spent / limit * 100.0
            } else {
                100.0
            };
            out.push_str(&format!(
                "budget {:<6} {} of {} ({pct:.0}%)\n",
                m.as_str(),
                m.amount(spent),
                m.amount(limit)
            ));
        }
    }
    if let Some(r) = v.at_limit() {
        out.push_str(&format!(
            "paused at its budget: {}\n  allow more: reins budget allow {id} {}\n  or stop here: reins budget stop {id}\n",
            r.sentence(),
            reins_core::api::budget_suggestion(&r)
        ));
    }
    out
}

fn spent_words(v: &BudgetView) -> String {
    BudgetMeasure::ALL
        .into_iter()
        .map(|m| m.amount(v.spent.of(m)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_reads_each_measure_and_refuses_nonsense() {
        assert_eq!(
            parse_more("tokens=20_000"),
            Ok((BudgetMeasure::Tokens, 20_000.0))
        );
        assert_eq!(parse_more("cost=0.5"), Ok((BudgetMeasure::Cost, 0.5)));
        assert_eq!(parse_more("wall=30m"), Ok((BudgetMeasure::Wall, 1800.0)));
        assert_eq!(parse_more("wall=2h"), Ok((BudgetMeasure::Wall, 7200.0)));
        assert_eq!(parse_more("steps=5"), Ok((BudgetMeasure::Steps, 5.0)));
        assert!(parse_more("tokens").is_err());
        assert!(parse_more("money=5").is_err());
        assert!(parse_more("tokens=lots").is_err());
        assert!(parse_more("wall=3d").is_err());
    }
}
