//! `scripts/fuzz plan`: see `reins_fuzz::plan`.
fn main() {
    reins_fuzz::fuzz(reins_fuzz::plan);
}
