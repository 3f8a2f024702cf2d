//! `scripts/fuzz rules`: see `reins_fuzz::rules`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        reins_fuzz::rules(data);
    });
}
