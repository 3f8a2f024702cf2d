//! `reins agents add|list|remove`: external agents (ACP) registered by name, so a run says
//! `--agent qwen` instead of the whole command line. Their secrets are keyring names, never values.

use clap::Subcommand;
use reins_core::api::{AgentEntry, Reins};

use crate::exit;
use crate::output::{print_json, table};

#[derive(Subcommand)]
pub enum AgentsCommand {
    /// Register an agent: `reins agents add qwen --env OPENAI_API_KEY=openai -- qwen --acp`.
    Add(AddArgs),
    /// The registered agents and their commands.
    List,
    /// Unregister an agent (its runs keep the command they were started with).
    Remove(NameArg),
}

#[derive(clap::Args)]
pub struct AddArgs {
    /// A name for the agent (letters, digits, '-', '_', '.').
    name: String,
    /// Set VAR from the keyring entry KEY (`reins keys set KEY`) when the agent starts; repeatable.
    #[arg(long = "env", value_name = "VAR=KEY", value_parser = var_key)]
    env: Vec<(String, String)>,
    /// Pass VAR through from Reins' own environment; repeatable.
    #[arg(long = "pass-env", value_name = "VAR")]
    pass_env: Vec<String>,
    /// Let the agent write DIR besides its own state; repeatable. Reins confines every agent it
    /// starts: an agent it does not know writes nothing but its temp dir (its workspace writes go
    /// through Reins), and a known one writes its own state dirs. Naming the workspace here lets it
    /// write the workspace itself, minus the protected paths. Reins' own dirs stay out of reach.
    #[arg(long = "may-write", value_name = "DIR")]
    may_write: Vec<std::path::PathBuf>,
    /// The agent's program and arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM ARGS")]
    command: Vec<String>,
}

#[derive(clap::Args)]
pub struct NameArg {
    name: String,
}

/// `VAR=KEY` into its halves.
pub fn var_key(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((var, key)) if !var.is_empty() && !key.is_empty() => {
            Ok((var.to_owned(), key.to_owned()))
        }
        _ => Err(format!(
            "{text:?}: expected VAR=KEY, a variable and the keyring entry that holds its value"
        )),
    }
}

pub async fn exec(reins: &Reins, cmd: AgentsCommand, json: bool) -> reins_core::api::Result<u8> {
    match cmd {
        AgentsCommand::Add(a) => {
            let entry = AgentEntry {
                name: a.name.clone(),
                command: a.command,
                env: a.env.into_iter().collect(),
                pass_env: a.pass_env,
                may_write: a.may_write,
            };
            reins.add_agent(entry.clone())?;
            if json {
                print_json(&serde_json::json!({ "name": entry.name, "command": entry.command }));
            } else {
                println!(
                    "registered agent {:?}; run it with `reins run --acp GOAL --agent {} --workspace DIR`",
                    entry.name, entry.name
                );
            }
        }
        AgentsCommand::List => {
            let agents = reins.agents()?;
            if json {
                let list: Vec<_> = agents
                    .iter()
                    .map(|a| {
                        serde_json::json!({
                            "name": a.name, "command": a.command, "env": a.env, "passEnv": a.pass_env,
                        })
                    })
                    .collect();
                print_json(&list);
            } else if agents.is_empty() {
                println!("no agents registered; `reins agents add NAME -- PROGRAM ARGS…` adds one");
            } else {
                let rows: Vec<Vec<String>> = agents
                    .iter()
                    .map(|a| {
                        let env: Vec<String> = a
                            .env
                            .iter()
                            .map(|(v, k)| format!("{v}=keyring:{k}"))
                            .collect();
                        vec![a.name.clone(), shell_words::join(&a.command), env.join(" ")]
                    })
                    .collect();
                print!("{}", table(&["NAME", "COMMAND", "ENV"], &rows));
            }
        }
        AgentsCommand::Remove(a) => {
            let removed = reins.remove_agent(&a.name)?;
            if json {
                print_json(&serde_json::json!({ "name": a.name, "removed": removed }));
            } else if removed {
                println!("removed agent {:?}", a.name);
            } else {
                println!("no agent named {:?} is registered", a.name);
                return Ok(exit::RUN_FAILED);
            }
        }
    }
    Ok(exit::DONE)
}
