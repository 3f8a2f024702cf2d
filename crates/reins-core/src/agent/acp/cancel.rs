//! Ending an external agent's work in order. A pause, a drain or a cancellation that finds the agent
//! mid-turn sends it ACP's `session/cancel` and waits a moment for the turn to end, so it stops at a
//! point it knows about; then its process ends with the attempt. A request the agent is waiting on
//! when its run is cancelled or paused is answered with its reject option (a permission) or an
//! error (a write, a read, a command) before the process ends: it is never left hanging, and never
//! answered yes.

use std::time::Duration;

use agent_client_protocol::v1::schema::CancelNotification;
use agent_client_protocol::v1::Responder;
use serde_json::{json, Value};

use super::session::Incoming;
use super::{AcpAgent, Live};
use crate::progress::Silent;

/// How long an agent is given to end its turn after `session/cancel`.
const GRACE: Duration = Duration::from_secs(5);
/// How long the last answers are given to reach an agent before its process ends.
const FLUSH: Duration = Duration::from_millis(300);

/// A request the agent waits on while Reins decides it.
pub(super) struct Pending {
    pub(super) responder: Responder<Value>,
    /// A permission request: its reject option, if it offered one. None: a write, a read or a
    /// command.
    pub(super) permission: Option<Option<String>>,
}

impl Pending {
    /// Answers it "no": the reject option of a permission (else "cancelled"), an error otherwise.
    pub(super) fn refuse(self, why: &str) {
        let answer = match self.permission {
            Some(Some(reject)) => Ok(json!({"outcome": {"outcome": "selected", "optionId": reject}})),
            Some(None) => Ok(json!({"outcome": {"outcome": "cancelled"}})),
            None => Err(agent_client_protocol::Error::new(-32000, why.to_owned())),
        };
        let _ = self.responder.respond_with_result(answer);
    }
}

#[async_trait::async_trait]
impl crate::agent::sessions::Kept for Live {
    fn pid(&self) -> u32 {
        self.process.pid()
    }

    async fn end(self: Box<Self>, why: &str) {
        (*self).end(why).await;
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

impl Live {
    /// Ends the agent's session for a run that will not go on here (cancelled, or paused while
    /// it waited for a person): what it waits on is refused, its turn cancelled, and, after a
    /// moment for those to reach it, its process ended.
    pub(super) async fn end(self, why: &str) {
        let pending = self.responder.lock().ok().and_then(|mut p| p.take());
        if let Some(pending) = pending {
            pending.refuse(why);
        }
        let _ = self
            .process
            .conn
            .send_notification(CancelNotification::new(self.session.clone()));
        tokio::time::sleep(FLUSH).await;
        // Dropping the process ends its whole process group.
        drop(self);
    }
}

impl AcpAgent {
    /// The run stops at its safe point while the agent is mid-turn: `session/cancel`, then the
    /// agent's last updates are kept and anything it asks meanwhile is refused, until its turn ends
    /// (or the grace runs out). The next prompt tells it why it stopped.
    pub(super) async fn cancel_turn(&mut self) {
        if !self.state.in_turn {
            return;
        }
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let _ = live
            .process
            .conn
            .send_notification(CancelNotification::new(live.session.clone()));
        let deadline = tokio::time::Instant::now() + GRACE;
        while let Some(live) = self.live.as_mut() {
            let event = match tokio::time::timeout_at(deadline, live.process.events.recv()).await {
                Ok(Some(e)) => e,
                Ok(None) | Err(_) => break,
            };
            match event {
                Incoming::Request { request, responder } => {
                    let permission = matches!(
                        *request,
                        agent_client_protocol::v1::schema::AgentRequest::RequestPermissionRequest(_)
                    )
                    .then_some(None);
                    Pending {
                        responder,
                        permission,
                    }
                    .refuse("the run is stopping; nothing more is carried out now");
                }
                // Its account of what it did up to here still goes on the timeline.
                Incoming::Update(n) => {
                    let _ = self.on_update(&n, &Silent);
                }
                Incoming::TurnEnded(_) | Incoming::Closed(_) => break,
            }
        }
        self.state.in_turn = false;
        // What it says next is a new message, not the rest of the one it was cut off in.
        self.end_message();
        self.state.tell.push(
            "Your last turn was cancelled because the person stopped the run (a pause) before you finished. Carry on with the task from where you were."
                .into(),
        );
    }
}
