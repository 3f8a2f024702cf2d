//! The `reins` binary. The whole CLI is the library (`lib.rs`), so the desktop app can answer to
//! `reins` too: the package ships one program under both names.

/// Reins' programs allocate with mimalloc: a long run's turns allocate and free many small
/// strings, and under glibc's allocator its last turns took 1.16–1.27× its tenth; under mimalloc,
/// 0.97–1.19× (six runs each, `docs/benchmarks.md`, issue 49).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    reins_cli::main()
}
