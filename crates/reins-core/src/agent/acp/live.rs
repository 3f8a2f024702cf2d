//! The external agents this process keeps alive between a run's attempts: a run that waits for a
//! person ends its attempt, but its agent is still waiting for the answer, so the process is kept
//! here and adopted by the run's next attempt in this process. Dropped (ended) with the engine.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Live;
use crate::ids::RunId;

#[derive(Default)]
pub struct Sessions {
    live: Mutex<HashMap<RunId, Live>>,
}

impl Sessions {
    pub fn new() -> Self {
        Self::default()
    }

    pub(super) fn keep(&self, run: RunId, live: Live) {
        if let Ok(mut m) = self.live.lock() {
            m.insert(run, live);
        }
    }

    pub(super) fn take(&self, run: RunId) -> Option<Live> {
        self.live.lock().ok()?.remove(&run)
    }

    /// Ends the process kept for `run`, if any: the run was cancelled, or paused while it waited
    /// for a person. What the agent waits on is refused (see [`Live::end`]).
    pub async fn end(&self, run: RunId, why: &str) {
        let live = self.take(run);
        if let Some(live) = live {
            live.end(why).await;
        }
    }

    /// Whether a process of `run` is kept alive here.
    pub fn holds(&self, run: RunId) -> bool {
        self.live.lock().is_ok_and(|m| m.contains_key(&run))
    }

    /// Whether `pid` is the agent process of `run` that this process keeps alive: not an orphan.
    pub fn is_kept(&self, run: RunId, pid: u32) -> bool {
        self.live
            .lock()
            .is_ok_and(|m| m.get(&run).is_some_and(|l| l.process.pid() == pid))
    }
}
