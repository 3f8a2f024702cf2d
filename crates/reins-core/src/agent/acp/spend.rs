//! What an ACP agent says it spent, as running totals per session: the tokens of its turns (the
//! `usage` a prompt's answer carries) and its `usage_update`s mid-turn: their cost, and the tokens
//! in its context, which it has read at least once, so a lower bound of what it spent. They count
//! toward the run's budget; a report heard twice counts once, and a cost in another currency is
//! left out.

use agent_client_protocol::v1::schema::Usage;
use serde_json::Value;

use crate::agent::Account;

/// The source a session's totals are kept under.
fn source(session: Option<&str>) -> String {
    format!("acp:{}", session.unwrap_or("-"))
}

/// A `usage_update`: the tokens in context (a lower bound of those spent) and the cumulative cost,
/// when it is in US dollars.
pub(super) fn from_update(session: Option<&str>, v: &Value) -> Option<Account> {
    let tokens = v.get("used").and_then(Value::as_u64)?;
    let cost = v.get("cost");
    let usd = cost.and_then(|c| c.get("currency")).and_then(Value::as_str) == Some("USD");
    let amount = cost.and_then(|c| c.get("amount")).and_then(Value::as_f64);
    Some(Account::Spent {
        source: source(session),
        tokens,
        cost_usd: amount.filter(|_| usd),
    })
}

/// The tokens of the session so far, as a turn's answer reports them.
pub(super) fn from_turn(session: Option<&str>, usage: Option<&Usage>) -> Option<Account> {
    let u = usage?;
    Some(Account::Spent {
        source: source(session),
        tokens: u.total_tokens.max(u.input_tokens + u.output_tokens),
        cost_usd: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tokens_in_context_count_and_only_a_dollar_cost() {
        let usd = serde_json::json!({"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": 0.25, "currency": "USD"}});
        let Some(Account::Spent { cost_usd, tokens, .. }) = from_update(Some("s1"), &usd) else {
            panic!("a dollar cost is spending");
        };
        assert_eq!((cost_usd, tokens), (Some(0.25), 10));
        let eur = serde_json::json!({"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": 0.25, "currency": "EUR"}});
        let Some(Account::Spent { cost_usd, tokens, .. }) = from_update(Some("s1"), &eur) else {
            panic!("its tokens still count");
        };
        assert_eq!((cost_usd, tokens), (None, 10));
        let broken = serde_json::json!({"sessionUpdate": "usage_update", "size": 100});
        assert!(from_update(Some("s1"), &broken).is_none());
    }
}
