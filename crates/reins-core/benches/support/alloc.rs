//! The allocator Reins' programs use (`crates/reins-cli/src/main.rs`), so a bench measures the
//! core as it ships.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
