//! The external agents this process keeps alive between a run's attempts: a run that waits for a
//! person ends its attempt, but its agent is still waiting for the answer, so the process is kept
//! here and adopted by the run's next attempt in this process. Dropped (ended) with the engine.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::ids::RunId;

/// A live process of an agent kind, kept between attempts.
#[async_trait]
pub trait Kept: Send {
    fn pid(&self) -> u32;
    /// Ends the process: what the agent waits on is refused with `why`.
    async fn end(self: Box<Self>, why: &str);
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

#[derive(Default)]
pub struct Sessions {
    live: Mutex<HashMap<RunId, Box<dyn Kept>>>,
}

impl Sessions {
    pub fn new() -> Self {
        Self::default()
    }

    pub(super) fn keep(&self, run: RunId, live: Box<dyn Kept>) {
        if let Ok(mut m) = self.live.lock() {
            m.insert(run, live);
        }
    }

    /// The process kept for `run`, if it is of type `T` (an agent kind's own).
    pub(super) fn take<T: 'static>(&self, run: RunId) -> Option<T> {
        let kept = self.live.lock().ok()?.remove(&run)?;
        kept.into_any().downcast::<T>().ok().map(|b| *b)
    }

    /// Ends the process kept for `run`, if any: the run was cancelled, or paused while it waited
    /// for a person. What the agent waits on is refused.
    pub async fn end(&self, run: RunId, why: &str) {
        let live = self.live.lock().ok().and_then(|mut m| m.remove(&run));
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
            .is_ok_and(|m| m.get(&run).is_some_and(|l| l.pid() == pid))
    }
}
