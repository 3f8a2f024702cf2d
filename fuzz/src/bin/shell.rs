//! `scripts/fuzz shell`: see `reins_fuzz::shell`.
fn main() {
    reins_fuzz::fuzz(reins_fuzz::shell);
}
