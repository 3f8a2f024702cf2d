//! Named fault points for the crash tests.
//!
//! With the `fault-injection` feature, `fault_point!("after_intent")` aborts the process (no unwinding,
//! no destructors, exactly like `kill -9` as far as the disk is concerned) when the environment
//! variable `REINS_FAULT` names that point. Without the feature the macro compiles to nothing.

/// The environment variable that arms a fault point.
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
pub const FAULT_ENV: &str = "REINS_FAULT";

/// When set (fault-injection builds only), every executed effect appends one line to this file, so a
/// test can count how many times an effect really ran across crashes and restarts.
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
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
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
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

/// When set (fault-injection builds only) to `POINT:KIND[:TIMES]`, `fault_error!(POINT)` returns an
/// error of KIND (`enospc`, `eio`, `busy`) the first TIMES times it is reached in this process
/// (always, without TIMES).
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
pub const ERROR_ENV: &str = "REINS_FAULT_ERROR";

#[cfg(feature = "fault-injection")]
static ERRORS_RAISED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The error armed for `point`, if any (always None without the fault-injection feature).
pub fn error_at(_point: &str) -> Option<std::io::Error> {
    #[cfg(feature = "fault-injection")]
    {
        use std::sync::atomic::Ordering;
        let spec = std::env::var(ERROR_ENV).ok()?;
        let mut parts = spec.split(':');
        if parts.next()? != _point {
            return None;
        }
        let errno = match parts.next()? {
            "enospc" => libc::ENOSPC,
            "eio" => libc::EIO,
            "busy" => libc::EBUSY,
            _ => return None,
        };
        if let Some(times) = parts.next().and_then(|t| t.parse::<u32>().ok()) {
            if ERRORS_RAISED.fetch_add(1, Ordering::Relaxed) >= times {
                return None;
            }
        }
        eprintln!("reins: fault point {_point}: raising errno {errno}");
        return Some(std::io::Error::from_raw_os_error(errno));
    }
    #[allow(unreachable_code)]
    None
}
