//! OpenTelemetry export through the door: where it stands, one pass on demand, and the follower a
//! long-lived face (the worker, the app, `reins run`) keeps while it lives.

use super::Reins;
use crate::error::Result;
use crate::telemetry::{self, Follower, Pass, Status};

/// A follower running beside the face that started it; `stop` lets go of the export.
pub struct TelemetryFollower {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl TelemetryFollower {
    /// Stops following after one last pass (bounded by the send timeout), and lets go of the
    /// export so another process can take it at once.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

impl Reins {
    /// This machine's export (None: off), from the environment and `telemetry.toml`.
    pub fn telemetry_export(&self) -> Result<Option<telemetry::Export>> {
        telemetry::config::load()
    }

    /// Where every export from this database stands, and this machine's.
    pub async fn telemetry_status(&self) -> Result<Status> {
        let export = self.telemetry_export()?;
        telemetry::status(self.store(), export.as_ref()).await
    }

    /// Sends what the collector has not taken yet, now. None: export is off here.
    pub async fn telemetry_pass(&self) -> Result<Option<Pass>> {
        let Some(export) = self.telemetry_export()? else {
            return Ok(None);
        };
        let follower = self.follower(export).await?;
        Ok(Some(follower.pass_once().await?))
    }

    /// Starts following the audit log in the background, when export is on. A configuration that
    /// does not read is an error here, at start, not a silent "off".
    pub async fn follow_telemetry(&self) -> Result<Option<TelemetryFollower>> {
        let Some(export) = self.telemetry_export()? else {
            return Ok(None);
        };
        let every = export.every;
        let follower = self.follower(export).await?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move { follower.follow(every, stopped).await });
        Ok(Some(TelemetryFollower { stop, task }))
    }

    async fn follower(&self, export: telemetry::Export) -> Result<Follower> {
        Follower::new(self.store().clone(), export, self.engine.secrets().clone()).await
    }
}
