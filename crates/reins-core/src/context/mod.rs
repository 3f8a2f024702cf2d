//! The context assembler: what goes into one model call, under an explicit token budget, with a
//! manifest of every candidate — its tokens, whether it went in, and why.
//!
//! **Budget**: input = context window − reserved output − tool schemas − safety margin.
//!
//! **Hard layer**, never cut: system and policy text, goal and working memory, the current request
//! (tool schemas are already taken off the budget). If it does not fit, the call is refused with
//! the numbers — a model never gets a silently truncated instruction.
//!
//! **Soft layer**, ranked by score and taken greedily while it fits:
//!
//! `score = 0.35·relevance + 0.25·importance + 0.25·recency + 0.15·continuity − 0.10·cost`
//!
//! where relevance and importance are 0–1 (given by the caller), `recency = 1 / (1 + age / 8)`
//! (age in turns), continuity is 1 for items of the current task thread, and `cost` is the item's
//! share of the input budget. Profile facts are capped at 5% of the budget together. Only the
//! newest summary version is a candidate. An item larger than a quarter of the budget (or one that
//! no longer fits) goes in as its digest — a summary plus the artifact it refers to — when it has
//! one (tool evidence, a conversation turn carrying a large tool result).
//!
//! Pure: counts are given (computed once, when an item is stored), so assembling 11,000 candidates
//! takes milliseconds.

use serde::{Deserialize, Serialize};

pub mod chain;
mod record;
pub mod tokens;
pub mod working;

#[cfg(test)]
mod tests;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Budget {
    pub window: usize,
    pub reserved_output: usize,
    pub tool_schemas: usize,
    pub margin: usize,
}

impl Budget {
    pub fn input(&self) -> usize {
        self.window
            .saturating_sub(self.reserved_output)
            .saturating_sub(self.tool_schemas)
            .saturating_sub(self.margin)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "ContextKind")]
pub enum Kind {
    // Hard, in prompt order.
    System,
    Policy,
    Goal,
    WorkingMemory,
    // Soft, in prompt order.
    Fact,
    Summary,
    History,
    RecentTurn,
    ToolEvidence,
    // Hard, last.
    Request,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::System => "system",
            Kind::Policy => "policy",
            Kind::Goal => "goal",
            Kind::WorkingMemory => "working_memory",
            Kind::Fact => "fact",
            Kind::Summary => "summary",
            Kind::History => "history",
            Kind::RecentTurn => "recent_turn",
            Kind::ToolEvidence => "tool_evidence",
            Kind::Request => "request",
        }
    }

    pub fn is_hard(self) -> bool {
        matches!(
            self,
            Kind::System | Kind::Policy | Kind::Goal | Kind::WorkingMemory | Kind::Request
        )
    }
}

/// A large item's stand-in: a summary and where the whole is kept. `text` is what goes into the
/// prompt (it names the artifact), `tokens` its count.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Digest {
    pub text: String,
    pub tokens: usize,
    /// The artifact (blob) holding the whole.
    pub artifact: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    pub id: String,
    pub kind: Kind,
    #[serde(skip)]
    pub text: String,
    pub tokens: usize,
    /// 0–1: how much this bears on the current request.
    pub relevance: f32,
    /// 0–1: how much it matters in itself (a decision, an error, a user instruction).
    pub importance: f32,
    /// Turns since it was said (0: this turn).
    pub age: u32,
    /// Part of the current task thread.
    pub continuity: bool,
    /// Summaries: their version (only the newest is a candidate).
    pub version: Option<u32>,
    pub digest: Option<Digest>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum Fate {
    Included,
    /// Went in as its digest.
    Digested,
    Cut,
}

impl Fate {
    pub fn as_str(self) -> &'static str {
        match self {
            Fate::Included => "included",
            Fate::Digested => "digested",
            Fate::Cut => "cut",
        }
    }
}

/// Why an item went in or not (rendered as a sentence in the manifest).
#[derive(Clone, Debug, PartialEq)]
pub enum Why {
    Hard,
    Fits {
        score: f32,
    },
    OverBudget {
        needs: usize,
        left: usize,
        score: f32,
    },
    FactsCapped {
        left: usize,
    },
    Superseded {
        version: u32,
        newest: u32,
    },
    Digested {
        tokens: usize,
        over_quarter: bool,
    },
    /// A reason read back from a stored manifest: its sentence as it was recorded.
    Recorded(String),
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Why::Recorded(ref sentence) => f.write_str(sentence),
            Why::Hard => write!(f, "hard layer: never cut"),
            Why::Fits { score } => write!(f, "score {score:.3}; fits"),
            Why::OverBudget { needs, left, score } => write!(
                f,
                "over budget: needs {needs} token(s), {left} left (score {score:.3})"
            ),
            Why::FactsCapped { left } => write!(
                f,
                "profile facts are capped at {FACTS_SHARE_PCT}% of the budget; {left} token(s) of that left"
            ),
            Why::Superseded { version, newest } => {
                write!(f, "summary v{version} is superseded by v{newest}")
            }
            Why::Digested {
                tokens,
                over_quarter,
            } => write!(
                f,
                "{tokens} tokens is {}: its summary went in, with a reference to the whole",
                if over_quarter {
                    "over a quarter of the budget"
                } else {
                    "more than was left"
                }
            ),
        }
    }
}

impl Serialize for Why {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Why {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Why::Recorded)
    }
}

#[cfg(feature = "specta")]
impl specta::Type for Why {
    fn definition(types: &mut specta::Types) -> specta::datatype::DataType {
        <String as specta::Type>::definition(types)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Entry {
    pub id: String,
    pub kind: Kind,
    pub tokens: usize,
    /// Tokens it took in the prompt (its digest's, when digested; 0 when cut).
    pub used: usize,
    pub score: Option<f32>,
    pub fate: Fate,
    pub why: Why,
}

/// What went into one model call and why: persisted per call, shown by `reins show RUN --context`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename = "ContextManifest")]
pub struct Manifest {
    pub budget: Budget,
    pub input_budget: usize,
    pub used: usize,
    pub counter: String,
    pub entries: Vec<Entry>,
    /// The ids of the profile facts that went in.
    pub facts_used: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Assembly {
    /// In prompt order: (item id, the text that goes in).
    pub parts: Vec<(String, String)>,
    pub manifest: Manifest,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ContextError {
    #[error("the instructions, goal, working memory and request need {hard} tokens but the input budget is {input} (window {window} − output {output} − tool schemas {schemas} − margin {margin}); nothing is cut from them: shorten them or use a model with a larger window")]
    HardLayerTooLarge {
        hard: usize,
        input: usize,
        window: usize,
        output: usize,
        schemas: usize,
        margin: usize,
    },
}

/// The share of the input budget profile facts may take together.
pub const FACTS_SHARE_PCT: usize = 5;

pub fn score(item: &Item, input: usize) -> f32 {
    let recency = 1.0 / (1.0 + item.age as f32 / 8.0);
    let cost = item.tokens as f32 / input.max(1) as f32;
    0.35 * item.relevance.clamp(0.0, 1.0)
        + 0.25 * item.importance.clamp(0.0, 1.0)
        + 0.25 * recency
        + 0.15 * f32::from(u8::from(item.continuity))
        - 0.10 * cost
}

/// Builds one model input from `items` under `budget`; `counter` names how tokens were counted.
pub fn assemble(budget: Budget, items: Vec<Item>, counter: &str) -> Result<Assembly, ContextError> {
    let input = budget.input();
    let hard: usize = items
        .iter()
        .filter(|i| i.kind.is_hard())
        .map(|i| i.tokens)
        .sum();
    if hard > input {
        return Err(ContextError::HardLayerTooLarge {
            hard,
            input,
            window: budget.window,
            output: budget.reserved_output,
            schemas: budget.tool_schemas,
            margin: budget.margin,
        });
    }
    let newest_summary = items
        .iter()
        .filter(|i| i.kind == Kind::Summary)
        .filter_map(|i| i.version)
        .max();
    let mut left = input - hard;
    let mut facts_left = input * FACTS_SHARE_PCT / 100;
    let mut entries: Vec<(usize, Entry)> = Vec::with_capacity(items.len());
    // Soft candidates by score, best first (ties: newer first, then id, so the order is stable).
    let mut soft: Vec<(usize, f32)> = items
        .iter()
        .enumerate()
        .filter(|(_, i)| !i.kind.is_hard())
        .map(|(n, i)| (n, score(i, input)))
        .collect();
    soft.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(items[a.0].age.cmp(&items[b.0].age))
            .then(items[a.0].id.cmp(&items[b.0].id))
    });
    for (n, item) in items.iter().enumerate().filter(|(_, i)| i.kind.is_hard()) {
        entries.push((
            n,
            Entry {
                id: item.id.clone(),
                kind: item.kind,
                tokens: item.tokens,
                used: item.tokens,
                score: None,
                fate: Fate::Included,
                why: Why::Hard,
            },
        ));
    }
    for (n, s) in soft {
        let item = &items[n];
        let mut entry = Entry {
            id: item.id.clone(),
            kind: item.kind,
            tokens: item.tokens,
            used: 0,
            score: Some(s),
            fate: Fate::Cut,
            why: Why::OverBudget {
                needs: item.tokens,
                left,
                score: s,
            },
        };
        let digest_fits = |left: usize| item.digest.as_ref().filter(|d| d.tokens <= left);
        if item.kind == Kind::Summary && item.version < newest_summary {
            entry.why = Why::Superseded {
                version: item.version.unwrap_or(0),
                newest: newest_summary.unwrap_or(0),
            };
        } else if item.kind == Kind::Fact && item.tokens > facts_left.min(left) {
            entry.why = Why::FactsCapped {
                left: facts_left.min(left),
            };
        } else if item.digest.is_some()
            && (item.tokens > input / 4 || item.tokens > left)
            && digest_fits(left).is_some()
        {
            let d = digest_fits(left).map_or(0, |d| d.tokens);
            left -= d;
            entry.used = d;
            entry.fate = Fate::Digested;
            entry.why = Why::Digested {
                tokens: item.tokens,
                over_quarter: item.tokens > input / 4,
            };
        } else if item.tokens > left {
            // The reason set above: over budget.
        } else {
            left -= item.tokens;
            if item.kind == Kind::Fact {
                facts_left -= item.tokens;
            }
            entry.used = item.tokens;
            entry.fate = Fate::Included;
            entry.why = Why::Fits { score: s };
        }
        entries.push((n, entry));
    }
    // Prompt order: by kind, then oldest first within a kind (conversation reads forward).
    entries.sort_by(|(a, _), (b, _)| {
        let (x, y) = (&items[*a], &items[*b]);
        x.kind.cmp(&y.kind).then(y.age.cmp(&x.age)).then(a.cmp(b))
    });
    let mut parts = Vec::new();
    let mut facts_used = Vec::new();
    for (n, e) in &entries {
        let item = &items[*n];
        match e.fate {
            Fate::Included => parts.push((item.id.clone(), item.text.clone())),
            Fate::Digested => {
                if let Some(d) = &item.digest {
                    parts.push((item.id.clone(), d.text.clone()));
                }
            }
            Fate::Cut => {}
        }
        if item.kind == Kind::Fact && e.fate == Fate::Included {
            facts_used.push(item.id.clone());
        }
    }
    let used = entries.iter().map(|(_, e)| e.used).sum();
    Ok(Assembly {
        parts,
        manifest: Manifest {
            budget,
            input_budget: input,
            used,
            counter: counter.into(),
            entries: entries.into_iter().map(|(_, e)| e).collect(),
            facts_used,
        },
    })
}
