//! Engine tests: the protocol's decisions without IO (no database), and the few that need the
//! engine's internals.

mod bound;
mod checkpoint;
mod claim;
mod decide;
mod decision;
mod fixtures;
