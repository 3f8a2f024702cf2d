//! `scripts/fuzz rules`: see `reins_fuzz::rules`.
fn main() {
    // A panic the code under test catches itself (the bash parser's, which the classifier turns
    // into "high") is not a crash; one that escapes the target is: afl's own catch aborts on it.
    // Set REINS_FUZZ_VERBOSE to see every panic when replaying an input by hand.
    let verbose = std::env::var_os("REINS_FUZZ_VERBOSE").is_some();
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if verbose {
            default(info);
        }
    }));
    afl::fuzz_nohook!(|data: &[u8]| {
        reins_fuzz::rules(data);
    });
}
