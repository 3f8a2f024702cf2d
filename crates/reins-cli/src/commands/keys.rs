//! `reins keys set|status|delete`: API keys in the OS keyring. A key is read from the terminal
//! (not echoed) or from stdin — never from the command line, where `ps` and shell history see it.

use std::io::{IsTerminal as _, Read as _};

use clap::Subcommand;
use reins_core::api::Reins;
use reins_core::api::Secret;

use crate::exit;
use crate::output::{print_json, table};

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Store a key under NAME (then run with `--key NAME`). Reads it from the terminal without
    /// echo, or from stdin when piped: `printf %s "$KEY" | reins keys set openai`.
    Set(NameArg),
    /// Whether keys are set: the names given, or every name a run here uses. Never shows a key.
    Status(StatusArgs),
    /// Remove the key stored under NAME.
    Delete(NameArg),
}

#[derive(clap::Args)]
pub struct NameArg {
    /// A name for the key, e.g. `openai` (letters, digits, '-', '_', '.').
    name: String,
}

#[derive(clap::Args)]
pub struct StatusArgs {
    names: Vec<String>,
}

pub async fn exec(reins: &Reins, cmd: KeysCommand, json: bool) -> reins_core::api::Result<u8> {
    match cmd {
        KeysCommand::Set(a) => {
            reins_core::api::check_key_name(&a.name).map_err(reins_core::api::Error::Invalid)?;
            let key = read_key(&a.name)?;
            reins.keys_set(&a.name, key).await?;
            if json {
                print_json(&serde_json::json!({ "name": a.name, "set": true }));
            } else {
                println!(
                    "stored key {:?} in the OS keyring; use it with `reins run --llm … --key {}`",
                    a.name, a.name
                );
            }
        }
        KeysCommand::Status(a) => {
            let names = if a.names.is_empty() {
                reins.key_names_in_use().await?
            } else {
                a.names
            };
            let status = reins.keys_status(names).await?;
            if json {
                print_json(&status);
            } else if status.is_empty() {
                println!("the OS keyring is reachable; no run here uses a key (`reins keys status NAME` checks one)");
            } else {
                let rows: Vec<Vec<String>> = status
                    .iter()
                    .map(|s| vec![s.name.clone(), if s.set { "set" } else { "not set" }.into()])
                    .collect();
                print!("{}", table(&["NAME", "KEY"], &rows));
            }
        }
        KeysCommand::Delete(a) => {
            let deleted = reins.keys_delete(&a.name).await?;
            if json {
                print_json(&serde_json::json!({ "name": a.name, "deleted": deleted }));
            } else if deleted {
                println!("deleted key {:?}", a.name);
            } else {
                println!("no key named {:?} was stored", a.name);
            }
        }
    }
    Ok(exit::DONE)
}

fn read_key(name: &str) -> reins_core::api::Result<Secret> {
    let text = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("API key for {name} (not shown): "))
            .map_err(|e| reins_core::api::Error::Invalid(format!("cannot read the key: {e}")))?
    } else {
        let mut s = String::new();
        std::io::stdin()
            .take(64 * 1024)
            .read_to_string(&mut s)
            .map_err(|e| {
                reins_core::api::Error::Invalid(format!("cannot read the key from stdin: {e}"))
            })?;
        s
    };
    let text = text.trim().to_owned();
    reins_core::api::check_key_value(&text)?;
    Ok(Secret::new(text))
}
