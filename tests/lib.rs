//! Helpers shared by the story tests: a private copy of the example workspace and a fresh data dir.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reins_core::agent::script::Plan;
use reins_core::blob::BlobStore;
use reins_core::data_dir::DataDir;
use reins_core::engine::Engine;
use reins_core::policy::Policy;
use reins_core::store::Store;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A temp dir holding `ws/` (a copy of examples/ops-workspace) and `data/` (an empty data dir).
pub struct Sandbox {
    pub tmp: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> anyhow::Result<Self> {
        let tmp = tempfile::tempdir()?;
        copy_dir(
            &repo_root().join("examples/ops-workspace"),
            &tmp.path().join("ws"),
        )?;
        Ok(Self { tmp })
    }

    pub fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    pub fn data(&self) -> DataDir {
        DataDir::at(&self.tmp.path().join("data"))
    }

    pub fn read(&self, rel: &str) -> anyhow::Result<String> {
        Ok(std::fs::read_to_string(self.ws().join(rel))?)
    }

    /// An engine over this sandbox's data dir with the given policy.
    pub async fn engine(&self, policy: Arc<dyn Policy>) -> anyhow::Result<Engine> {
        let data = self.data();
        data.ensure()?;
        let store = Store::open(&data.database()).await?;
        let blobs = BlobStore::open(&data.blobs())?;
        Ok(Engine::new(store, blobs, policy, 30_000))
    }
}

/// Facade options for tests about runs (not about review): file changes inside the workspace run
/// without review (tests/fixtures/allow-file-changes.toml); high risk is still reviewed.
pub fn options() -> reins_core::api::Options {
    reins_core::api::Options {
        policy_file: Some(repo_root().join("tests/fixtures/allow-file-changes.toml")),
        ..reins_core::api::Options::default()
    }
}

pub fn example_plan(name: &str) -> anyhow::Result<Plan> {
    let path = repo_root().join("examples/plans").join(name);
    Ok(Plan::from_toml(
        &std::fs::read_to_string(&path)?,
        &path.display().to_string(),
    )?)
}

pub fn plan(text: &str) -> anyhow::Result<Plan> {
    Ok(Plan::from_toml(text, "inline plan")?)
}
pub mod llm_setup;
pub mod mock_llm;
