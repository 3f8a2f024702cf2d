//! Reins core: the harness that owns an agent's run. Durable checkpoints, the step protocol and its
//! effect journal, the workspace jail, recovery and rollback. Deliberately not here: anything only a
//! desktop can do — this crate knows no screen, and both the `reins` CLI and the desktop app are thin
//! faces over [`api`].

pub mod agent;
pub mod api;
pub mod approval;
pub mod audit;
pub mod blob;
pub mod checkpoint;
pub mod clock;
pub mod compat;
pub mod context;
pub mod data_dir;
pub mod digest;
pub mod engine;
pub mod error;
pub mod failure;
pub mod fault;
pub mod ids;
pub mod journal;
pub mod keys;
pub mod memory;
pub mod policy;
pub mod process;
pub mod provider;
pub mod resume;
pub mod run;
pub mod secrets;
pub mod step;
pub mod store;
pub mod tools;
pub mod worker;
pub mod workspace;

pub use error::{Error, Result};
