// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;

/// The same allocator as the `reins` program (`crates/reins-cli/src/main.rs` says why).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Started as `reins` (the package links `/usr/bin/reins` to this program), it is the CLI: one
/// program carries the core once instead of twice.
fn main() -> ExitCode {
    // The confinement helper runs before anything else starts a thread.
    if let Some(code) = reins_core::api::contain_helper() {
        return code;
    }
    reins_core::api::contain_with_this_binary();
    if reins_app::started_as_cli(std::env::args_os().next()) {
        return reins_cli::main();
    }
    reins_app::run();
    ExitCode::SUCCESS
}
