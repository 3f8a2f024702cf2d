//! Handing an agent that takes outside requests (see `requests.rs`) the rows waiting for it: the
//! oldest first, one at a time, each marked taken with the drive's next commit — by the step that
//! decides it, or as only recorded.

use serde_json::Value;

use crate::error::Result;
use crate::ids::RunId;
use crate::store::requests;
use crate::store::write::Write;

use super::commit::Change;
use super::drive::{Drive, Stop};
use super::{DriveOutcome, Engine};
use crate::checkpoint::Level;
use crate::run::{RunEvent, RunState};
use crate::store::write::Transition;

/// How long a drive waiting on its agent sleeps at most between looks for a new outside request
/// when no commit woke it: a hook's request, written by another process, wakes it (see
/// `store::wake`), so this only bounds a wake-up that was missed.
const LOOK: std::time::Duration = std::time::Duration::from_millis(500);

impl Drive<'_> {
    /// Hands the agent the oldest request nobody took, when it takes one now. Whether it takes
    /// requests now: then the drive also waits for the next one while the agent decides its move.
    pub(super) async fn hand_request(&mut self) -> Result<bool> {
        let wants = |d: &mut Self| d.agent.external().is_some_and(|x| x.wants_request());
        if !wants(self) || self.served.request.is_some() {
            return Ok(wants(self));
        }
        if let Some(body) = self.served.carried.take() {
            self.served.in_hand = true;
            self.served.asker = true;
            return self.hand(String::new(), Ok(body), false);
        }
        if self.served.asker {
            return Ok(wants(self));
        }
        let Some((row, more)) = requests::oldest_open(self.e.store.pool(), self.run).await? else {
            self.served.more = false;
            return Ok(true);
        };
        let body = self
            .e
            .opened_text(&row.body, "a request from outside")
            .await?;
        let body = serde_json::from_str::<Value>(&body)
            .map_err(|e| crate::agent::AgentError::State(e.to_string()));
        self.hand(row.id, body, more)
    }

    /// Hands the agent request `id`; whether it takes requests now.
    fn hand(
        &mut self,
        id: String,
        body: std::result::Result<Value, crate::agent::AgentError>,
        more: bool,
    ) -> Result<bool> {
        self.served.more = more;
        let taken = body.and_then(|v| match self.agent.external() {
            Some(x) => x.take_request(&v),
            None => Ok(()),
        });
        self.served.request = Some(id);
        if let Err(e) = taken {
            // Marked taken, as only recorded: its asker hears that it was not taken up.
            tracing::warn!(run_id = %self.run, "a request from outside cannot be read: {e}");
            self.tie_request(None);
        }
        Ok(self.agent.external().is_some_and(|x| x.wants_request()))
    }

    /// Ties the request the agent was handed to its move: decided by step `seq`, or recorded.
    pub(super) fn tie_request(&mut self, seq: Option<i64>) {
        if let Some(id) = self.served.request.take() {
            if std::mem::take(&mut self.served.in_hand) {
                self.served.carried_taken = Some(seq);
            } else if let Ok(mut taken) = self.served.taken.lock() {
                taken.push(Write::RequestTaken { id, seq });
            }
        }
    }

    /// Whether a request waited behind the last one handed over, for the agent, which asks
    /// nothing else now: the drive goes on. (One that arrives after is its asker's to drive.)
    pub(super) async fn more_requests(&mut self) -> Result<bool> {
        Ok(self.served.more && self.agent.external().is_some_and(|x| x.wants_request()))
    }
}

impl Drive<'_> {
    /// The agent outside Reins asks nothing now: checkpoint what it knows, let go of the run, and
    /// leave it attached, waiting for the agent's next request.
    pub(super) async fn detach(&mut self) -> Result<DriveOutcome> {
        let note = "waiting for the agent's next tool call".to_owned();
        let change = Change::default().checkpoint(self.checkpoint(Level::Step, note.clone())?);
        let stop = Stop {
            transition: Transition::Moves(vec![RunEvent::Detach], None),
            state: RunState::Attached,
            message: note.clone(),
            attempt: note,
        };
        self.stop(change, stop).await
    }
}

/// Resolves once a request of run `run` waits to be taken: looked at after each commit of this
/// process and every [`LOOK`] (another process's request is only seen by looking).
pub(super) async fn request_arrives(e: &Engine, run: RunId) {
    // An agent whose move is ready at once (a hooked session's) is not kept waiting for this:
    // nothing is listened to unless its move takes a while.
    tokio::task::yield_now().await;
    let mut changes = e.store.waiter();
    loop {
        if let Ok(Some(_)) = requests::oldest_open(e.store.pool(), run).await {
            return;
        }
        changes.wait(LOOK).await;
    }
}
