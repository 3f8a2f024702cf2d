//! Long-term profile memory: a small set of facts about the user (language, style, expertise,
//! format, workflow, preference) that the user fully controls.
//!
//! - Every fact keeps its versions and where each came from (the user, or an agent's run and step
//!   with the words it was drawn from). A fact for an existing (category, key) is a new version;
//!   nothing is overwritten silently.
//! - An agent's fact is stored only when its category is allowed and its confidence reaches the
//!   threshold; otherwise it waits as a suggestion the user accepts or dismisses.
//! - Secrets are never stored: a fact whose key, value or source text holds one is refused with the
//!   reason, and nothing of it is written anywhere (not versions, suggestions, the audit log or
//!   logs).
//! - Memory is data, never policy: nothing here is read by the policy.
//! - Deleting a fact removes its value from every table (secure delete, WAL checkpointed); the audit
//!   log records only that it happened — it never holds a key or a value.

use serde::{Deserialize, Serialize};

use crate::event as ev;
use crate::clock::now_ms;
use crate::ids::{RunId, SuggestionId};
use crate::store::audit::{self, Actor};
use crate::store::memory::{self as table, FactRow, SuggestionRow, VersionRow};
use crate::store::change::Change;
use crate::store::memory_write::MemoryWrite;
use crate::store::write::Write;
use crate::store::{Store, StoreError};

mod check;
mod suggestion;
#[cfg(test)]
mod tests;

use check::{check, check_name};
pub use suggestion::{accept, dismiss, suggestions};

/// The categories allowed until the user changes them.
pub const DEFAULT_CATEGORIES: [&str; 6] = [
    "language",
    "style",
    "expertise",
    "format",
    "workflow",
    "preference",
];
/// An agent's fact below this confidence becomes a suggestion.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

const MAX_KEY: usize = 64;
const MAX_VALUE: usize = 1000;
const MAX_SOURCE: usize = 2000;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("not remembered: the {field} holds {what}; memory never stores secrets, and nothing of it was written")]
    Secret {
        field: &'static str,
        what: &'static str,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("memory is off: agents cannot add facts (`reins memory on` switches it back on)")]
    Off,
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Settings {
    pub enabled: bool,
    pub threshold: f64,
    pub categories: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold: DEFAULT_THRESHOLD,
            categories: DEFAULT_CATEGORIES.iter().map(|c| (*c).to_owned()).collect(),
        }
    }
}

/// Where a fact comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// The user said it ("remember …", `reins memory add`, an edit, an accepted suggestion's value
    /// is still the agent's).
    User,
    /// An agent proposed it (`memory.remember`), during a run's step, drawn from `source`.
    Agent {
        run: Option<RunId>,
        step: Option<i64>,
        source: Option<String>,
    },
}

#[derive(Clone, Debug)]
pub struct NewFact {
    pub category: String,
    pub key: String,
    pub value: String,
    /// 0–1; the user's own facts default to 1.
    pub confidence: Option<f64>,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub enum Remembered {
    /// Stored as a new fact, or a new version of one.
    Stored { fact: FactRow },
    /// The same value was already the current version: nothing changed.
    Unchanged { fact: FactRow },
    /// Waiting for the user.
    Suggested { suggestion: SuggestionRow },
}

#[derive(Clone, Debug)]
pub struct FactDetail {
    pub fact: FactRow,
    /// Newest first.
    pub history: Vec<VersionRow>,
}

/// Reads the memory settings (defaults for what was never set).
pub async fn settings(store: &Store) -> Result<Settings> {
    let mut s = Settings::default();
    if let Some(v) = table::setting(store.pool(), "memory.enabled").await? {
        s.enabled = v == "true";
    }
    if let Some(v) = table::setting(store.pool(), "memory.threshold").await? {
        s.threshold = v.parse().unwrap_or(DEFAULT_THRESHOLD);
    }
    if let Some(v) = table::setting(store.pool(), "memory.categories").await? {
        if let Ok(list) = serde_json::from_str::<Vec<String>>(&v) {
            s.categories = list;
        }
    }
    Ok(s)
}

/// Changes settings; each change is audited as `settings.changed` (old and new value).
pub async fn configure(
    store: &Store,
    enabled: Option<bool>,
    threshold: Option<f64>,
    categories: Option<Vec<String>>,
) -> Result<Settings> {
    let mut changes: Vec<(&str, String)> = Vec::new();
    if let Some(t) = threshold {
        if !(0.0..=1.0).contains(&t) {
            return Err(MemoryError::Invalid(format!(
                "threshold {t}: between 0 and 1"
            )));
        }
        changes.push(("memory.threshold", t.to_string()));
    }
    if let Some(list) = categories {
        if list.is_empty() {
            return Err(MemoryError::Invalid(
                "at least one category (facts are grouped by category)".into(),
            ));
        }
        for c in &list {
            check_name("category", c, 32)?;
        }
        let json = serde_json::to_string(&list).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        changes.push(("memory.categories", json));
    }
    if let Some(on) = enabled {
        changes.push(("memory.enabled", on.to_string()));
    }
    let rows = changes
        .into_iter()
        .map(|(key, value)| Write::Setting {
            key: key.into(),
            value,
        })
        .collect();
    let change = Change::rows(rows).announcing(Box::new(|applied| {
        let changed = applied.written.settings.iter().cloned();
        changed
            .map(|(key, from, to)| {
                let enabled = key == "memory.enabled";
                let on = to == "true";
                let change = ev::MemorySetting {
                    setting: key,
                    from,
                    to,
                };
                let kind = match (enabled, on) {
                    (true, true) => ev::Kind::MemorySwitchedOn(change),
                    (true, false) => ev::Kind::MemorySwitchedOff(change),
                    _ => ev::Kind::MemorySettingChanged(change),
                };
                audit::Event::new(Actor::User, None, kind)
            })
            .collect()
    }));
    store.apply(None, change, None).await?;
    settings(store).await
}

/// Remembers a fact: stored (a new fact or version), unchanged, or — for an agent's fact outside the
/// allowed categories or below the threshold — a suggestion. A refused fact (a secret, invalid
/// input, memory off for agents) is written nowhere; its refusal is audited without its content.
pub async fn remember(store: &Store, new: NewFact) -> Result<Remembered> {
    let checked = check(&new);
    let settings = settings(store).await?;
    let is_agent = matches!(new.origin, Origin::Agent { .. });
    let checked = match checked {
        Ok(_) if is_agent && !settings.enabled => Err(MemoryError::Off),
        other => other,
    };
    let (key, confidence) = match checked {
        Ok(c) => c,
        Err(e) => {
            if matches!(e, MemoryError::Secret { .. }) {
                let refused = audit::Event::new(
                    if is_agent { Actor::Agent } else { Actor::User },
                    run_of(&new.origin),
                    ev::FactRefused {
                        category: new.category.clone(),
                        reason: e.to_string(),
                    },
                );
                store.apply(None, Change::default().event(refused), None).await?;
            }
            return Err(e);
        }
    };
    let value = new.value.trim().to_owned();
    let (run_id, step_seq, source_text, origin) = match &new.origin {
        Origin::User => (None, None, None, "user"),
        Origin::Agent { run, step, source } => {
            (run.map(|r| r.to_string()), *step, source.clone(), "agent")
        }
    };
    let allowed = settings.categories.iter().any(|c| c == &new.category);
    if !is_agent && !allowed {
        return Err(MemoryError::Invalid(format!(
            "category {:?}: memory keeps {} (`reins memory config --categories` changes the list)",
            new.category,
            settings.categories.join(", ")
        )));
    }
    let now = now_ms();
    let run = run_of(&new.origin);
    if is_agent && (!allowed || confidence < settings.threshold) {
        let reason = if allowed {
            format!(
                "confidence {confidence} is below the threshold {}",
                settings.threshold
            )
        } else {
            format!("category {:?} is not one memory keeps", new.category)
        };
        let row = SuggestionRow {
            id: SuggestionId::new().to_string(),
            category: new.category.clone(),
            key,
            value,
            confidence,
            run_id,
            step_seq,
            source_text,
            reason,
            created_at: now,
        };
        let change = Change::rows(vec![Write::Memory(MemoryWrite::Suggestion(Box::new(row)))])
            .announcing(Box::new(move |applied| match &applied.written.memory.suggestion {
                // The same proposal again (a step done again after a restart) is not a second
                // suggestion.
                Some((row, true)) => vec![audit::Event::new(
                    Actor::Agent,
                    run,
                    ev::MemorySuggested {
                        suggestion: row.id.clone(),
                        category: row.category.clone(),
                        step: step_seq,
                        reason: row.reason.clone(),
                    },
                )],
                _ => Vec::new(),
            }));
        let applied = store.apply(None, change, None).await?;
        let (suggestion, _) = applied.written.memory.suggestion.ok_or_else(|| {
            StoreError::Invalid("the suggestion was not reported written".into())
        })?;
        return Ok(Remembered::Suggested { suggestion });
    }
    let row = FactRow {
        id: String::new(),
        category: new.category.clone(),
        key,
        version: 1,
        value,
        confidence,
        origin: origin.into(),
        run_id,
        step_seq,
        source_text,
        created_at: now,
        updated_at: now,
    };
    let write = MemoryWrite::Fact {
        row: Box::new(row),
        unless_same: true,
    };
    let actor = if is_agent { Actor::Agent } else { Actor::User };
    let change = Change::rows(vec![Write::Memory(write)]).announcing(Box::new(move |applied| {
        match &applied.written.memory.fact {
            Some((row, true)) => {
                let written = ev::FactWritten {
                    fact: row.id.clone(),
                    category: row.category.clone(),
                    version: row.version,
                    origin: row.origin.clone(),
                    step: row.step_seq,
                };
                vec![audit::Event::new(
                    actor,
                    run,
                    if row.version == 1 {
                        ev::Kind::FactAdded(written)
                    } else {
                        ev::Kind::FactEdited(written)
                    },
                )]
            }
            _ => Vec::new(),
        }
    }));
    let applied = store.apply(None, change, None).await?;
    match applied.written.memory.fact {
        Some((fact, true)) => Ok(Remembered::Stored { fact }),
        Some((fact, false)) => Ok(Remembered::Unchanged { fact }),
        None => Err(StoreError::Invalid("the fact was not reported written".into()).into()),
    }
}

fn run_of(origin: &Origin) -> Option<RunId> {
    match origin {
        Origin::Agent { run, .. } => *run,
        Origin::User => None,
    }
}

/// The user's edit of a fact: a new version with the new value.
pub async fn edit(store: &Store, id: &str, value: &str) -> Result<Remembered> {
    let current = table::get(store.pool(), id).await?;
    remember(
        store,
        NewFact {
            category: current.category,
            key: current.key,
            value: value.into(),
            confidence: Some(1.0),
            origin: Origin::User,
        },
    )
    .await
}

/// Facts, by category then key; optionally one category, and those whose key or value contains
/// `search` (case-insensitive).
pub async fn list(
    store: &Store,
    category: Option<&str>,
    search: Option<&str>,
) -> Result<Vec<FactRow>> {
    let needle = search.map(str::to_lowercase);
    Ok(table::list(store.pool())
        .await?
        .into_iter()
        .filter(|f| category.is_none_or(|c| f.category == c))
        .filter(|f| {
            needle.as_ref().is_none_or(|n| {
                f.key.to_lowercase().contains(n) || f.value.to_lowercase().contains(n)
            })
        })
        .collect())
}

pub async fn show(store: &Store, id: &str) -> Result<FactDetail> {
    let fact = table::get(store.pool(), id).await?;
    let history = table::history(store.pool(), id).await?;
    Ok(FactDetail { fact, history })
}

/// Deletes a fact and every version of it; the audit log records only that it happened.
pub async fn delete(store: &Store, id: &str) -> Result<()> {
    let fact = id.to_owned();
    let change = Change::rows(vec![Write::Memory(MemoryWrite::Delete(id.into()))]).announcing(
        Box::new(move |applied| {
            let category = applied.written.memory.deleted.clone().unwrap_or_default();
            vec![audit::Event::new(
                Actor::User,
                None,
                ev::FactDeleted { fact, category },
            )]
        }),
    );
    store.apply(None, change, None).await?;
    table::checkpoint(store.pool()).await?;
    Ok(())
}

/// Deletes every fact and suggestion: (facts, suggestions) removed.
pub async fn clear(store: &Store) -> Result<(u64, u64)> {
    let change = Change::rows(vec![Write::Memory(MemoryWrite::Clear)]).announcing(Box::new(
        |applied| {
            let (facts, suggestions) = applied.written.memory.cleared.unwrap_or_default();
            vec![audit::Event::new(
                Actor::User,
                None,
                ev::MemoryCleared { facts, suggestions },
            )]
        },
    ));
    let applied = store.apply(None, change, None).await?;
    let (facts, suggestions) = applied.written.memory.cleared.unwrap_or_default();
    table::checkpoint(store.pool()).await?;
    Ok((facts, suggestions))
}

/// The profile facts as context candidates (`category.key: value`, importance from confidence),
/// counted with `counter`; none when memory is off — it is then neither extracted nor injected.
pub async fn for_context(
    store: &Store,
    counter: &dyn crate::context::tokens::TokenCounter,
) -> Result<Vec<crate::context::Item>> {
    if !settings(store).await?.enabled {
        return Ok(Vec::new());
    }
    Ok(table::list(store.pool())
        .await?
        .into_iter()
        .map(|f| {
            let text = format!("{}.{}: {}", f.category, f.key, f.value);
            crate::context::Item {
                tokens: counter.count(&text),
                id: f.id,
                kind: crate::context::Kind::Fact,
                text,
                relevance: 0.5,
                importance: f.confidence as f32,
                age: 0,
                continuity: false,
                version: None,
                digest: None,
            }
        })
        .collect())
}
