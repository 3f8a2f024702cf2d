//! Named fault points for the crash tests.
//!
//! With the `fault-injection` feature, `fault_point!("after_intent")` aborts the process (no unwinding,
//! no destructors, exactly like `kill -9` as far as the disk is concerned) when the environment
//! variable `REINS_FAULT` names that point. Without the feature the macro compiles to nothing.

/// The environment variable that arms a fault point.
pub const FAULT_ENV: &str = "REINS_FAULT";

/// When set (fault-injection builds only), every executed effect appends one line to this file, so a
/// test can count how many times an effect really ran across crashes and restarts.
pub const EFFECT_LOG_ENV: &str = "REINS_EFFECT_LOG";

#[macro_export]
macro_rules! fault_point {
    ($name:literal) => {
        #[cfg(feature = "fault-injection")]
        {
            if std::env::var($crate::fault::FAULT_ENV).as_deref() == Ok($name) {
                eprintln!("reins: fault point {} reached: aborting", $name);
                std::process::abort();
            }
        }
    };
}

/// Records one executed effect (fault-injection builds only).
pub fn record_effect(_what: &str) {
    #[cfg(feature = "fault-injection")]
    {
        use std::io::Write as _;
        if let Ok(path) = std::env::var(EFFECT_LOG_ENV) {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "{_what}");
                let _ = f.sync_all();
            }
        }
    }
}

/// When set (fault-injection builds only), each effect sleeps this many milliseconds just before it
/// runs: long enough for a test to freeze, kill or pause the worker in the middle of a step.
pub const DELAY_ENV: &str = "REINS_FAULT_DELAY_MS";

/// Sleeps `REINS_FAULT_DELAY_MS` (fault-injection builds only).
pub async fn delay() {
    #[cfg(feature = "fault-injection")]
    {
        if let Some(ms) = std::env::var(DELAY_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
    }
}
