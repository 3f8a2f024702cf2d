//! A sandbox, a facade with an in-memory key store and fast retries, and a scripted model server:
//! what the LLM agent's story tests share.

use std::sync::Arc;

use reins_core::agent::llm::Spec;
use reins_core::api::{Options, Reins};
use reins_core::engine::{DriveOutcome, Observer, Silent};
use reins_core::failure::RetryBudget;
use reins_core::ids::RunId;
use reins_core::keys::MemoryStore;
use reins_core::provider::Settings;
use reins_core::run::RunState;
use reins_core::store::steps;

use crate::mock_llm::{MockLlm, Reply};
use crate::Sandbox;

pub struct Setup {
    pub sb: Sandbox,
    pub reins: Reins,
    pub mock: MockLlm,
    pub keys: Arc<MemoryStore>,
}

/// `review`: the built-in policy (writes are reviewed); otherwise file changes run at once.
pub async fn setup(script: Vec<Reply>, review: bool) -> anyhow::Result<Setup> {
    let sb = Sandbox::new()?;
    let policy_file = if review {
        let p = sb.tmp.path().join("policy.toml");
        std::fs::write(&p, "# the built-in defaults\n")?;
        Some(p)
    } else {
        crate::options().policy_file
    };
    let options = Options {
        policy_file,
        retry: RetryBudget {
            max_retries: 3,
            window_ms: 60_000,
            base_delay_ms: 10,
            max_delay_ms: 50,
        },
        ..Options::default()
    };
    let keys = Arc::new(MemoryStore::default());
    let reins = Reins::open(sb.data(), options)
        .await?
        .with_secrets(keys.clone());
    let mock = MockLlm::start(script)?;
    Ok(Setup {
        sb,
        reins,
        mock,
        keys,
    })
}

impl Setup {
    pub fn spec(&self, goal: &str) -> Spec {
        Spec {
            name: "llm test".into(),
            goal: goal.into(),
            settings: Settings {
                base_url: self.mock.base_url(),
                model: "mock-model".into(),
                context_window: 16_000,
                max_output: 1_000,
                timeout_s: 2,
                ..Settings::default()
            },
            max_turns: 10,
        }
    }

    pub async fn start(&self, spec: &Spec) -> anyhow::Result<RunId> {
        Ok(self
            .reins
            .create_llm_run(spec, &self.sb.ws(), &Silent)
            .await?)
    }

    /// Drives until the run finishes or needs a human, waiting out retry backoffs.
    pub async fn settle(&self, run: RunId, obs: &dyn Observer) -> anyhow::Result<DriveOutcome> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            match self.reins.drive(run, obs).await? {
                DriveOutcome::Retrying { at, .. } => {
                    let wait = (at - reins_core::clock::now_ms()).max(0).unsigned_abs();
                    tokio::time::sleep(std::time::Duration::from_millis(wait + 5)).await;
                }
                DriveOutcome::Skipped {
                    state: RunState::Queued,
                    ..
                } => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
                other => return Ok(other),
            }
        }
        anyhow::bail!("run {run} did not settle")
    }

    pub async fn steps(&self, run: RunId) -> anyhow::Result<Vec<steps::StepRow>> {
        Ok(steps::list(self.reins.store().pool(), run).await?)
    }
}

pub fn finished(o: &DriveOutcome, want: RunState) -> bool {
    matches!(o, DriveOutcome::Finished { state, .. } if *state == want)
}

/// Files under `dir` whose bytes contain `needle`. A file that vanishes while being read (SQLite's
/// `-shm` at close, the audit anchor's temp file being moved into place) cannot hold it.
pub fn files_containing(
    dir: &std::path::Path,
    needle: &[u8],
) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut found = Vec::new();
    if !dir.exists() {
        return Ok(found);
    }
    for entry in std::fs::read_dir(dir)? {
        let p = entry?.path();
        if p.is_dir() {
            found.extend(files_containing(&p, needle)?);
            continue;
        }
        match std::fs::read(&p) {
            Ok(bytes) if bytes.windows(needle.len()).any(|w| w == needle) => found.push(p),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(found)
}
