//! The `reins` binary. The whole CLI is the library (`lib.rs`), so the desktop app can answer to
//! `reins` too: the package ships one program under both names.

fn main() -> std::process::ExitCode {
    reins_cli::main()
}
