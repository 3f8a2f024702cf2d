//! `scripts/fuzz plan`: see `reins_fuzz::plan`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        reins_fuzz::plan(data);
    });
}
