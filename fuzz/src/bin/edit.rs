//! `scripts/fuzz edit`: see `reins_fuzz::edit`.
fn main() {
    reins_fuzz::fuzz(reins_fuzz::edit);
}
