//! Recording what an agent reports about itself and its own work (an external agent's identity,
//! tool calls, plan, usage and mode) on the run's timeline, before its next move is decided: the
//! agent's word, kept apart from what Reins decided.

use crate::agent::Account;
use crate::event::{self as ev, Actor};
use crate::error::Result;
use crate::store::audit;
use crate::store::write::Write;
use crate::store::runs;

use super::commit::Change;
use super::drive::Drive;

impl Drive<'_> {
    /// Commits what the agent reported since its last move, in one change.
    pub(super) async fn record_accounts(&mut self) -> Result<()> {
        let accounts = self
            .agent
            .external()
            .map(|x| x.take_accounts())
            .unwrap_or_default();
        if accounts.is_empty() {
            return Ok(());
        }
        let mut change = Change::default();
        for a in accounts {
            match a {
                Account::Identified(who) => {
                    let mut compat = runs::get(self.e.store.pool(), self.run).await?.compat;
                    if compat.external_agent.as_ref() != Some(&who) {
                        compat.external_agent = Some(who.clone());
                        change.rows.push(Write::RunCompat(Box::new(compat)));
                    }
                    change.events.push(audit::Event::new(Actor::Agent, Some(self.run), who));
                }
                Account::Update { what, detail } => {
                    change.events.push(audit::Event::new(
                        Actor::Agent,
                        Some(self.run),
                        ev::AgentReported {
                            what: what.into(),
                            detail,
                        },
                    ));
                }
                Account::Spent {
                    source,
                    tokens,
                    cost_usd,
                } => {
                    let micros = |usd: f64| (usd * 1_000_000.0).round() as i64;
                    change.rows.push(Write::AgentUsage {
                        source,
                        tokens: i64::try_from(tokens).unwrap_or(i64::MAX),
                        cost_micros: cost_usd.filter(|c| c.is_finite() && *c >= 0.0).map(micros),
                    });
                }
                Account::Blocked(blocked) => {
                    change.events.push(audit::Event::new(
                        Actor::Harness,
                        Some(self.run),
                        ev::AgentBlocked { blocked },
                    ));
                }
                Account::Unasked {
                    tool_call,
                    kind,
                    title,
                } => {
                    change.events.push(audit::Event::new(
                        Actor::Harness,
                        Some(self.run),
                        ev::ActedUnasked {
                            tool_call,
                            kind,
                            title,
                        },
                    ));
                }
            }
        }
        self.commit(change).await?;
        Ok(())
    }
}
