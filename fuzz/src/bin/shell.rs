//! `scripts/fuzz shell`: see `reins_fuzz::shell`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        reins_fuzz::shell(data);
    });
}
