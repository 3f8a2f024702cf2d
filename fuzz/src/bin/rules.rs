//! `scripts/fuzz rules`: see `reins_fuzz::rules`.
fn main() {
    reins_fuzz::fuzz(reins_fuzz::rules);
}
