//! Reins core: the harness that owns an agent's run. Durable checkpoints, the step protocol and its
//! effect journal, the workspace jail, recovery and rollback. Deliberately not here: anything only a
//! desktop can do — this crate knows no screen.
//!
//! [`api`] is the one door: the `reins` CLI, the desktop app and the tests outside this crate use
//! nothing else. The rooms behind it are private to the crate; the `internals` feature opens them to
//! the crate's own micro-benchmarks and to the fuzz targets in `fuzz/`, and nothing else turns it on.

pub mod api;

/// The rooms behind the door: `pub` with the `internals` feature (the benches, the fuzz targets),
/// crate-private otherwise.
macro_rules! rooms {
    ($($name:ident),* $(,)?) => {
        $(
            #[cfg(feature = "internals")]
            pub mod $name;
            #[cfg(not(feature = "internals"))]
            pub(crate) mod $name;
        )*
    };
}

rooms!(
    action, agent, approval, audit, blob, budget, checkpoint, clock, compat, contain, context,
    data_dir, device, digest, engine, error, event, failure, ids, input_file, journal, keys, mcp,
    memory, policy, process, progress, provider, resume, run, scratch, seal, secrets, settings,
    stage, stderr, step, store, telemetry, text, tools, view, worker, workspace,
);

#[cfg(test)]
mod test_rng;

// Declared by hand: it defines `fault_point!`, which a macro-expanded module could not export.
#[cfg(feature = "internals")]
pub mod fault;
#[cfg(not(feature = "internals"))]
pub(crate) mod fault;

pub use error::{Error, ErrorCode, Result};
