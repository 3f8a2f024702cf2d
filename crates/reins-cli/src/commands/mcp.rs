//! `reins mcp add|list|tools|remove`: MCP servers registered by name, whose tools an LLM run may be
//! offered (`reins run --llm GOAL --mcp NAME`). Their secrets are keyring names, never values.

use std::path::PathBuf;

use clap::Subcommand;
use reins_core::api::{McpServerSpec, McpServerView, Reins};

use crate::exit;
use crate::output::{print_json, table};

#[derive(Subcommand)]
pub enum McpCommand {
    /// Register a server: `reins mcp add fs -- npx @modelcontextprotocol/server-filesystem {workspace}`
    /// (a program, started per run in the workspace; `{workspace}` becomes its root) or
    /// `reins mcp add docs --url https://host/mcp` (streamable HTTP).
    Add(AddArgs),
    /// The registered servers.
    List,
    /// Start a server as a run would and list its tools, with the hints it claims.
    Tools(ToolsArgs),
    /// Unregister a server (runs keep the servers they were started with).
    Remove(NameArg),
    /// Serve the profile memory to another agent over MCP on stdin/stdout: `memory_recall` and
    /// `memory_suggest`, under the memory switch, categories and threshold; every call audited.
    /// Add it to any MCP client as the command `reins mcp serve`.
    Serve(ServeArgs),
    /// Carry stdin and stdout to the memory link of the Reins that started this agent (Reins
    /// offers this to the agents it confines, which cannot open its store; the token comes in
    /// REINS_MEMORY_TOKEN). Opens nothing of Reins' own.
    #[command(hide = true)]
    Relay(RelayArgs),
}

#[derive(clap::Args)]
pub struct RelayArgs {
    /// The link's loopback port.
    #[arg(long, value_name = "PORT")]
    pub port: u16,
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// The run the calls belong to (Reins sets this for the external agents it runs).
    #[arg(long, value_name = "RUN")]
    run: Option<String>,
}

#[derive(clap::Args)]
pub struct AddArgs {
    /// A name for the server (letters, digits, '-', '_'); its tools are offered as NAME__TOOL.
    name: String,
    /// The server's streamable HTTP endpoint, instead of a program.
    #[arg(long, value_name = "URL", conflicts_with_all = ["env", "pass_env"])]
    url: Option<String>,
    /// With --url: send the keyring entry KEY as `Authorization: Bearer …`.
    #[arg(long, value_name = "KEY", requires = "url")]
    bearer_key: Option<String>,
    /// Set VAR from the keyring entry KEY (`reins keys set KEY`) when the server starts; repeatable.
    #[arg(long = "env", value_name = "VAR=KEY", value_parser = crate::commands::agents::var_key)]
    env: Vec<(String, String)>,
    /// Pass VAR through from Reins' own environment; repeatable.
    #[arg(long = "pass-env", value_name = "VAR")]
    pass_env: Vec<String>,
    /// Seconds one tool call may take before the model is told the server hangs [default: 120]
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Let the server write DIR besides the workspace; repeatable. A server Reins starts runs
    /// confined: it reads the system, the workspace and its program, writes the workspace minus
    /// the protected paths, and reaches only the ports its command line's URLs name.
    #[arg(long = "may-write", value_name = "DIR", conflicts_with = "url")]
    may_write: Vec<std::path::PathBuf>,
    /// The server's program and arguments, after `--`.
    #[arg(last = true, value_name = "PROGRAM ARGS")]
    command: Vec<String>,
}

#[derive(clap::Args)]
pub struct ToolsArgs {
    name: String,
    /// The folder to start it in, as a run's workspace [default: the current folder]
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Also print each tool's argument schema.
    #[arg(long)]
    schemas: bool,
}

#[derive(clap::Args)]
pub struct NameArg {
    name: String,
}

pub async fn exec(reins: &Reins, cmd: McpCommand, json: bool) -> reins_core::api::Result<u8> {
    match cmd {
        McpCommand::Add(a) => {
            let spec = McpServerSpec {
                name: a.name.clone(),
                command: a.command,
                url: a.url,
                bearer_key: a.bearer_key,
                env: a.env.into_iter().collect(),
                pass_env: a.pass_env,
                may_write: a.may_write,
                timeout_s: a.timeout,
            };
            reins.add_mcp_server(spec.clone())?;
            if json {
                print_json(&McpServerView::from(&spec));
            } else {
                println!(
                    "registered MCP server {:?}; `reins mcp tools {}` lists its tools, `reins run --llm GOAL --mcp {} --workspace DIR` offers them",
                    spec.name, spec.name, spec.name
                );
            }
        }
        McpCommand::List => {
            let servers = reins.mcp_servers()?;
            let views: Vec<McpServerView> = servers.iter().map(McpServerView::from).collect();
            if json {
                print_json(&views);
            } else if views.is_empty() {
                println!(
                    "no MCP servers registered; `reins mcp add NAME -- PROGRAM ARGS…` adds one"
                );
            } else {
                let rows: Vec<Vec<String>> = views
                    .iter()
                    .map(|v| {
                        vec![
                            v.name.clone(),
                            v.transport.clone(),
                            v.command.clone(),
                            v.keys
                                .iter()
                                .map(|k| k.replacen('=', "=keyring:", 1))
                                .collect::<Vec<_>>()
                                .join(" "),
                        ]
                    })
                    .collect();
                print!(
                    "{}",
                    table(&["NAME", "TRANSPORT", "COMMAND", "KEYS"], &rows)
                );
            }
        }
        McpCommand::Tools(a) => {
            let workspace = match a.workspace {
                Some(w) => w,
                None => std::env::current_dir().map_err(|e| reins_core::api::Error::Io {
                    context: "the current folder".into(),
                    source: e,
                })?,
            };
            let view = reins.mcp_tools(&a.name, &workspace).await?;
            if json {
                print_json(&view);
            } else {
                println!(
                    "{} ({}): {} tool{}",
                    view.server,
                    view.label,
                    view.tools.len(),
                    if view.tools.len() == 1 { "" } else { "s" }
                );
                if let Some(how) = &view.confinement {
                    println!("it runs {how}");
                }
                for t in &view.tools {
                    println!("\n  {}  (offered as {})", t.name, t.function);
                    let description = t.description.lines().next().unwrap_or("").trim();
                    if !description.is_empty() {
                        println!("    {}", reins_core::api::reveal(description));
                    }
                    println!("    the server claims: {}", t.hints.describe());
                    if a.schemas {
                        let schema =
                            serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
                        for line in schema.lines() {
                            println!("    {line}");
                        }
                    }
                }
            }
        }
        McpCommand::Serve(a) => {
            let run = match a.run {
                Some(r) => Some(reins.resolve_run(&r).await?),
                None => None,
            };
            reins.serve_memory_mcp(run).await?;
        }
        McpCommand::Relay(a) => reins_core::api::relay_memory(a.port).await?,
        McpCommand::Remove(a) => {
            let removed = reins.remove_mcp_server(&a.name)?;
            if json {
                print_json(&serde_json::json!({ "name": a.name, "removed": removed }));
            } else if removed {
                println!("removed MCP server {:?}", a.name);
            } else {
                println!("no MCP server named {:?} is registered", a.name);
                return Ok(exit::RUN_FAILED);
            }
        }
    }
    Ok(exit::DONE)
}
