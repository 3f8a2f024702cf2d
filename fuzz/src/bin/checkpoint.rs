//! `scripts/fuzz checkpoint`: see `reins_fuzz::checkpoint`.
fn main() {
    reins_fuzz::fuzz(reins_fuzz::checkpoint);
}
