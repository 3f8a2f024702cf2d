//! What the durable-step benches share: the step stopwatch, the configs they write, and the
//! baseline's atomic file write.

use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use reins_core::api::{Observer, Progress};

/// When each step event arrived.
pub struct Stopwatch(pub Mutex<Vec<Instant>>);

impl Observer for Stopwatch {
    fn on(&self, p: &Progress) {
        if matches!(p, Progress::Step { .. }) {
            self.0.lock().unwrap().push(Instant::now());
        }
    }
}

pub fn content(i: usize) -> String {
    format!(
        "# generated config {i}\n{}",
        "key = value # padding to a realistic config size\n".repeat(20)
    )
}

/// Temp + fsync + rename + directory fsync, as Reins writes a file.
pub fn atomic_write(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    drop(f);
    std::fs::rename(&tmp, dir.join(name)).unwrap();
    std::fs::File::open(dir).unwrap().sync_all().unwrap();
}
