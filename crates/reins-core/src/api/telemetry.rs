//! OpenTelemetry export through the door: where it stands, one pass on demand, and the follower a
//! long-lived face (the worker, the app, `reins run`) keeps while it lives.

use serde::Serialize;

use super::Reins;
use crate::error::Result;
use crate::settings::TelemetrySettings;
use crate::telemetry::{self, Cursor, Follower, Pass, Status};

/// What Settings → Traces shows: what is saved, what is in force and from where, and how far the
/// export has got.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TelemetryView {
    /// `telemetry.toml`, where the Settings keep the export.
    pub file: String,
    /// What it holds (None: there is none, or it does not read: see `problem`).
    pub saved: Option<TelemetrySettings>,
    /// The export in force on this machine (None: off, or its configuration does not read).
    pub in_force: Option<TelemetryInForce>,
    /// Why the configuration does not read; nothing is exported until it is fixed.
    pub problem: Option<String>,
    /// The variable that wins over what is saved here, when one is set where the app runs.
    pub from_environment: Option<String>,
    /// Whether this process follows the log now.
    pub following: bool,
    /// The export's cursor here (None: nothing was sent to it yet).
    pub cursor: Option<Cursor>,
}

/// The export in force: where, from which setting, and with what.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TelemetryInForce {
    pub destination: String,
    pub source: String,
    /// Over OTLP/gRPC (else HTTP/protobuf).
    pub grpc: bool,
    pub content: bool,
    pub metrics: Option<String>,
}

/// The follower a long-lived face (the app) keeps, started again when the Settings change.
#[derive(Default)]
pub struct TelemetryFollowing {
    current: tokio::sync::Mutex<Option<TelemetryFollower>>,
}

impl TelemetryFollowing {
    /// Stops the follower there is (after its last pass) and starts one on the configuration in
    /// force now. False: export is off. An error: the configuration does not read, and nothing
    /// follows until it does.
    pub async fn restart(&self, reins: &Reins) -> Result<bool> {
        let mut current = self.current.lock().await;
        if let Some(f) = current.take() {
            f.stop().await;
        }
        *current = reins.follow_telemetry().await?;
        Ok(current.is_some())
    }

    /// Stops following, after one last pass.
    pub async fn stop(&self) {
        if let Some(f) = self.current.lock().await.take() {
            f.stop().await;
        }
    }

    pub async fn following(&self) -> bool {
        self.current.lock().await.is_some()
    }
}

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
    /// This machine's export (None: off), from the environment, `telemetry.toml` (the Settings)
    /// or `[telemetry]` in the person's policy file.
    pub fn telemetry_export(&self) -> Result<Option<telemetry::Export>> {
        let policy = self.engine.policy().telemetry();
        telemetry::config::load(policy.as_ref().map(|(t, p)| (t, p.as_path())))
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

    /// Settings → Traces; `following`: whether the face asking follows the log now.
    pub async fn telemetry_view(&self, following: bool) -> Result<TelemetryView> {
        let file = telemetry::config::file_path()?.display().to_string();
        let mut problems = Vec::new();
        let saved = crate::settings::saved_telemetry().unwrap_or_else(|e| {
            problems.push(e.to_string());
            None
        });
        let export = self.telemetry_export().unwrap_or_else(|e| {
            problems.push(e.to_string());
            None
        });
        let from_environment = [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_SDK_DISABLED",
        ]
        .into_iter()
        .find(|v| std::env::var(v).is_ok_and(|v| !v.trim().is_empty()))
        .map(str::to_owned);
        let status = telemetry::status(self.store(), export.as_ref()).await?;
        let cursor = status
            .destination
            .as_ref()
            .and_then(|d| status.cursors.into_iter().find(|c| &c.destination == d));
        problems.dedup();
        Ok(TelemetryView {
            file,
            saved,
            in_force: export.map(|e| TelemetryInForce {
                destination: e.destination(),
                source: e.source.clone(),
                grpc: e.protocol == telemetry::config::Protocol::Grpc,
                content: e.content,
                metrics: e.metrics.map(|m| m.to_string()),
            }),
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
            from_environment,
            following,
            cursor,
        })
    }

    /// Saves Settings → Traces (None: turns the saved export off). Checked before it is written.
    pub fn save_telemetry(&self, new: Option<&TelemetrySettings>) -> Result<()> {
        crate::settings::save_telemetry(new)?;
        self.keep_prompts_for_export();
        Ok(())
    }

    /// Keeps each model request's messages for export while the export in force sends content.
    /// A configuration that does not read keeps none; it is reported where the export runs.
    pub(super) fn keep_prompts_for_export(&self) {
        let content = self
            .telemetry_export()
            .ok()
            .flatten()
            .is_some_and(|e| e.content);
        self.engine.keep_prompts(content);
    }

    async fn follower(&self, export: telemetry::Export) -> Result<Follower> {
        Follower::new(
            self.store().clone(),
            self.engine.blobs().clone(),
            export,
            self.engine.secrets().clone(),
        )
        .await
    }
}
