//! The confinement helper alone: the same code as `reins __contain`, in a program small enough to
//! start in a fraction of a millisecond (the full `reins` binary spends about 1 ms paging itself in
//! before `main`). Reins uses it when it sits beside the running binary; otherwise the running
//! binary is its own helper.

fn main() -> std::process::ExitCode {
    reins_core::api::contain_helper().unwrap_or_else(|| {
        eprintln!("reins-contain is Reins' confinement helper; Reins starts it, people need not");
        std::process::ExitCode::from(2)
    })
}
