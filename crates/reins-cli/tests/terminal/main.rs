//! The `reins` binary as a person at a terminal meets it, one module per story; one test binary so
//! the CLI and the core are linked once. `crash` and `chaos` need `--features fault-injection`;
//! `keyring` is ignored unless a session bus with an unlocked keyring is there (`scripts/test`).

mod common;

mod acp;
mod audit;
mod audit_keys;
mod browser;
mod budget;
mod chaos;
mod claude;
mod claude_bypass;
mod claude_confined;
mod claude_headless;
mod cli;
mod contain;
mod control;
mod crash;
mod drain;
mod durability;
mod escape_hatch;
mod inputs;
mod keyring;
mod llm;
mod mcp;
mod memory;
mod model_server;
mod otel;
mod review;
mod serve;
mod stage;
mod team;
