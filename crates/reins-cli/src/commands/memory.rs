//! `reins memory …`: browse, add, edit, delete and clear remembered profile facts; review what
//! agents suggested; switch memory off and on.

use reins_core::api::Error;
use reins_core::api::Reins;
use reins_core::api::{
    FactOrigin as Origin, FactView as FactRow, NewFact, RememberedView as Remembered,
};

use crate::exit;
use crate::output::{print_json, table, time};

#[derive(clap::Subcommand)]
pub enum MemoryCommand {
    /// Facts by category (current versions).
    List(ListArgs),
    /// One fact: every version, where each came from (you, or an agent's run and step and its words).
    Show { id: String },
    /// Remember a fact. An existing category + key gets a new version; nothing is overwritten.
    Add(AddArgs),
    /// Give a fact a new value (a new version; the old ones stay in its history until deleted).
    Edit {
        id: String,
        #[arg(long)]
        value: String,
    },
    /// Delete a fact and every version of it, from every table (the audit log records only that
    /// it happened).
    Delete { id: String },
    /// Delete every fact and suggestion.
    Clear {
        /// Required: this cannot be undone.
        #[arg(long)]
        yes: bool,
    },
    /// Stop agents adding facts (and, with the context assembler, using them).
    Off,
    /// Let agents add facts again.
    On,
    /// Facts agents proposed that wait for you (outside the categories, or below the threshold).
    Suggestions,
    /// Keep a suggested fact.
    Accept { id: String },
    /// Drop a suggested fact (its value is removed).
    Dismiss { id: String },
    /// Show or change the settings: the categories memory keeps and the confidence threshold for
    /// agents' facts.
    Config(ConfigArgs),
}

#[derive(clap::Args)]
pub struct ListArgs {
    #[arg(long)]
    category: Option<String>,
    /// Only facts whose key or value contains this (any case).
    #[arg(long)]
    search: Option<String>,
}

#[derive(clap::Args)]
pub struct AddArgs {
    /// One of the categories memory keeps (`reins memory config`).
    #[arg(long)]
    category: String,
    /// A short name: a–z, 0–9, `_`, `-`, `.`.
    #[arg(long)]
    key: String,
    #[arg(long)]
    value: String,
    /// 0–1 (default 1: you said it).
    #[arg(long)]
    confidence: Option<f64>,
}

#[derive(clap::Args)]
pub struct ConfigArgs {
    /// Agents' facts below this confidence wait as suggestions (0–1).
    #[arg(long)]
    threshold: Option<f64>,
    /// The categories memory keeps, comma-separated.
    #[arg(long, value_delimiter = ',')]
    categories: Option<Vec<String>>,
}

pub async fn exec(reins: &Reins, cmd: MemoryCommand, json: bool) -> reins_core::api::Result<u8> {
    match cmd {
        MemoryCommand::List(args) => {
            let facts = reins
                .memory_list(args.category.as_deref(), args.search.as_deref())
                .await?;
            if json {
                print_json(&facts);
            } else if facts.is_empty() {
                let on = reins.memory_settings().await?.enabled;
                println!("no facts{}", if on { "" } else { " (memory is off)" });
            } else {
                print_facts(&facts);
            }
        }
        MemoryCommand::Show { id } => {
            let d = reins.memory_show(&id).await?;
            if json {
                print_json(&d);
                return Ok(exit::DONE);
            }
            let f = &d.fact;
            println!("{} {}.{} = {}", f.id, f.category, f.key, f.value);
            println!("  version {}, updated {}", f.version, time(f.updated_at));
            println!("history (newest first):");
            for v in &d.history {
                let from = match (&v.run_id, v.step_seq) {
                    (Some(run), Some(step)) => format!("agent, run {run} step {step}"),
                    (Some(run), None) => format!("agent, run {run}"),
                    (None, Some(step)) => format!("agent, step {step}"),
                    (None, None) => v.origin.clone(),
                };
                println!(
                    "  v{}  {}  {}  (confidence {:.2}, {from})",
                    v.version,
                    time(v.created_at),
                    v.value,
                    v.confidence
                );
                if let Some(src) = &v.source_text {
                    println!("       from: {src:?}");
                }
            }
        }
        MemoryCommand::Add(args) => {
            let outcome = reins
                .memory_remember(NewFact {
                    category: args.category,
                    key: args.key,
                    value: args.value,
                    confidence: args.confidence,
                    origin: Origin::User,
                })
                .await?;
            report(&outcome, json);
        }
        MemoryCommand::Edit { id, value } => {
            let outcome = reins.memory_edit(&id, &value).await?;
            report(&outcome, json);
        }
        MemoryCommand::Delete { id } => {
            reins.memory_delete(&id).await?;
            if json {
                print_json(&serde_json::json!({ "deleted": id }));
            } else {
                println!("deleted {id} and every version of it");
            }
        }
        MemoryCommand::Clear { yes } => {
            if !yes {
                return Err(Error::Invalid(
                    "`reins memory clear` deletes every fact and suggestion for good: add --yes"
                        .into(),
                ));
            }
            let (facts, suggestions) = reins.memory_clear().await?;
            if json {
                print_json(&serde_json::json!({ "facts": facts, "suggestions": suggestions }));
            } else {
                println!("deleted {facts} fact(s) and {suggestions} suggestion(s)");
            }
        }
        MemoryCommand::Off | MemoryCommand::On => {
            let on = matches!(cmd, MemoryCommand::On);
            let s = reins.memory_configure(Some(on), None, None).await?;
            if json {
                print_json(&s);
            } else {
                println!(
                    "memory is {}",
                    if s.enabled {
                        "on: agents may add facts (within the categories and threshold)"
                    } else {
                        "off: agents cannot add facts; yours stay until you delete them"
                    }
                );
            }
        }
        MemoryCommand::Suggestions => {
            let list = reins.memory_suggestions().await?;
            if json {
                print_json(&list);
            } else if list.is_empty() {
                println!("no suggestions");
            } else {
                let rows: Vec<Vec<String>> = list
                    .iter()
                    .map(|s| {
                        vec![
                            s.id.clone(),
                            format!("{}.{}", s.category, s.key),
                            s.value.clone(),
                            format!("{:.2}", s.confidence),
                            s.reason.clone(),
                        ]
                    })
                    .collect();
                print!(
                    "{}",
                    table(&["ID", "FACT", "VALUE", "CONF", "WHY IT WAITS"], &rows)
                );
                println!("keep one: reins memory accept ID   drop one: reins memory dismiss ID");
            }
        }
        MemoryCommand::Accept { id } => {
            let outcome = reins.memory_accept(&id).await?;
            report(&outcome, json);
        }
        MemoryCommand::Dismiss { id } => {
            reins.memory_dismiss(&id).await?;
            if json {
                print_json(&serde_json::json!({ "dismissed": id }));
            } else {
                println!("dismissed {id}");
            }
        }
        MemoryCommand::Config(args) => {
            let s = if args.threshold.is_none() && args.categories.is_none() {
                reins.memory_settings().await?
            } else {
                reins
                    .memory_configure(None, args.threshold, args.categories)
                    .await?
            };
            if json {
                print_json(&s);
            } else {
                println!("memory:     {}", if s.enabled { "on" } else { "off" });
                println!("categories: {}", s.categories.join(", "));
                println!(
                    "threshold:  {} (agents' facts below it wait as suggestions)",
                    s.threshold
                );
            }
        }
    }
    Ok(exit::DONE)
}

fn print_facts(facts: &[FactRow]) {
    let rows: Vec<Vec<String>> = facts
        .iter()
        .map(|f| {
            vec![
                f.id.clone(),
                f.category.clone(),
                f.key.clone(),
                f.value.replace('\n', "⏎"),
                format!("v{}", f.version),
                f.origin.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["ID", "CATEGORY", "KEY", "VALUE", "VER", "FROM"], &rows)
    );
}

fn report(outcome: &Remembered, json: bool) {
    if json {
        print_json(outcome);
        return;
    }
    match outcome {
        Remembered::Stored { fact } => println!(
            "remembered {}.{} = {} (v{}, id {})",
            fact.category, fact.key, fact.value, fact.version, fact.id
        ),
        Remembered::Unchanged { fact } => println!(
            "already remembered: {}.{} = {} (v{})",
            fact.category, fact.key, fact.value, fact.version
        ),
        Remembered::Suggested { suggestion } => println!(
            "suggested, not stored ({}): reins memory accept {}",
            suggestion.reason, suggestion.id
        ),
    }
}
