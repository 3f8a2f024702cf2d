//! `scripts/fuzz checkpoint`: see `reins_fuzz::checkpoint`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        reins_fuzz::checkpoint(data);
    });
}
