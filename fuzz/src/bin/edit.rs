//! `scripts/fuzz edit`: see `reins_fuzz::edit`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        reins_fuzz::edit(data);
    });
}
