//! A sandbox, a facade with an in-memory key store and fast retries, and a scripted model server:
//! what the LLM agent's story tests share.

use std::sync::Arc;

use reins_core::api::{
    DriveOutcome, LlmRunRequest, MemorySecrets as MemoryStore, Observer, Options, Reins,
    RetryBudget, RunId, RunState, Silent, StepView,
};

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
    setup_keyed(script, review, Arc::new(MemoryStore::default())).await
}

/// [`setup`] with the key store `keys` (one that is switched off, say).
pub async fn setup_keyed(
    script: Vec<Reply>,
    review: bool,
    keys: Arc<MemoryStore>,
) -> anyhow::Result<Setup> {
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
    let options = Options {
        secrets: Some(keys.clone()),
        ..options
    };
    let reins = Reins::open(sb.data(), options).await?;
    let mock = MockLlm::start(script)?;
    Ok(Setup {
        sb,
        reins,
        mock,
        keys,
    })
}

impl Setup {
    pub fn spec(&self, goal: &str) -> LlmRunRequest {
        LlmRunRequest {
            name: Some("llm test".into()),
            goal: goal.into(),
            base_url: Some(self.mock.base_url()),
            model: Some("mock-model".into()),
            context_window: Some(16_000),
            max_output: Some(1_000),
            timeout_s: Some(2),
            max_turns: Some(10),
            ..LlmRunRequest::default()
        }
    }

    pub async fn start(&self, spec: &LlmRunRequest) -> anyhow::Result<RunId> {
        Ok(self
            .reins
            .create_run(spec.clone(), &self.sb.ws(), &Silent)
            .await?)
    }

    /// Drives until the run finishes or needs a human, waiting out retry backoffs.
    pub async fn settle(&self, run: RunId, obs: &dyn Observer) -> anyhow::Result<DriveOutcome> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            match self.reins.drive(run, obs).await? {
                DriveOutcome::Retrying { at, .. } => {
                    let wait = (at - reins_core::api::now_ms()).max(0).unsigned_abs();
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

    pub async fn steps(&self, run: RunId) -> anyhow::Result<Vec<StepView>> {
        Ok(self.reins.run_detail(run).await?.steps)
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
