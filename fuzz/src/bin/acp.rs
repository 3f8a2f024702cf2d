//! `scripts/fuzz acp`: see `reins_fuzz::acp`.
fn main() {
    reins_fuzz::fuzz(reins_fuzz::acp);
}
