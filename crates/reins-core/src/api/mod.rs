//! The one door into the harness. The `reins` CLI, the desktop app and every test outside this
//! crate use only this module: its functions are the operations people have (start, drive, review,
//! pause, roll back, remember, audit), and what they return are view types made for the faces
//! (`types`), never storage rows. The rest of the crate is private to it. Defaults a face would
//! otherwise invent (a run's name, an LLM run's limits and model) are decided here, once.

use std::path::Path;
use std::sync::Arc;

use crate::blob::BlobStore;
use crate::engine::Engine;
use crate::policy::{Protected, RulePolicy};
use crate::store::Store;

mod audit_log;
mod budget;
mod devices;
mod hooks;
mod llm;
mod mcp;
mod memory;
mod policy_view;
mod review;
mod runs;
mod settings;
mod stage;
mod telemetry;

/// When this process was started as the confinement helper (`reins __contain …`), runs it and
/// returns its exit status. Binaries call it first, before anything starts a thread: the kernel's
/// rules must be applied in a process with one thread.
pub fn contain_helper() -> Option<std::process::ExitCode> {
    crate::contain::helper::dispatch()
}

/// Names the confinement helper for the processes Reins starts from this binary: `reins-contain`
/// beside it when it is there (it starts in a fraction of the time), else this binary itself.
pub fn contain_with_this_binary() {
    if let Ok(exe) = std::env::current_exe() {
        let small = exe.with_file_name("reins-contain");
        crate::contain::launch::set_helper(if small.is_file() { small } else { exe });
    }
}

pub use crate::agent::claude::{Start as ClaudeRunRequest, AFTER_REVIEW as CLAUDE_AFTER_REVIEW};

pub use crate::mcp::ServerSpec as McpServerSpec;
pub use crate::settings::LlmRunRequest;
pub use crate::settings::{save_alert_scope, saved_alert_scope, AlertScope};
pub use crate::settings::{
    save_team_database, saved_team_database, TeamCheck, TeamDatabase, TeamView,
};
pub use crate::settings::{AcpRunRequest, AgentEntry, AgentView, FoundAgent};
pub use crate::settings::{ModelServerCheck, ProviderDefaults};
pub use crate::settings::{TelemetryHeader, TelemetrySettings};
pub use crate::telemetry::{
    config::Protocol as TelemetryProtocol, Cursor as TelemetryCursor, Export as TelemetryExport,
    Pass as TelemetryPass, Status as TelemetryStatus, TELEMETRY_FILE,
};
pub use crate::view::{
    face, ActionView, Alert, Alerts, ApprovalView, AuditEventView, AuditPage, ContextView,
    DecidedView, FactDetailView, FactView, GrantView, IntentView, Recovery, RememberedView,
    RunDetail, RunSummary, StepView, SuggestionView, UsageView,
};
pub use devices::{DeviceView, PairedView};
pub use hooks::{
    claude_hooks_install, claude_hooks_uninstall, claude_hooks_view, claude_managed_scope,
    claude_scope, claude_user_scope, hook_blocked_said, hook_over_link, write_settings,
    ClaudeHooksView, HookAnswer, HookReply, SettingsScope, DEFAULT_HOOK_DEADLINE, HOOK_BLOCK,
    MAX_HOOK_INPUT,
};
pub use llm::KeyStatus;
pub use mcp::{relay_memory, McpServerView};
pub use policy_view::{PolicyState, POLICY_POLL};
pub use review::PolicyCheck;
pub use runs::RunRequest;
pub use stage::{StageRequest, StagedChange, StagedCommand};
pub use telemetry::{TelemetryFollower, TelemetryFollowing, TelemetryInForce, TelemetryView};

// The vocabulary the door speaks, from the rooms that own it.
pub use crate::action::{Action, ToolCall};

pub use crate::agent::script::Plan;
pub use crate::approval::watch::Watch as ApprovalWatch;
pub use crate::approval::{Matcher, OnTimeout, Scope, Status as ApprovalStatus};
pub use crate::audit::vouched::{KeyCount, KeysView};
pub use crate::audit::{ExportRequest, ExportSummary, PageRequest, Verification};
pub use crate::budget::{Budget, Measure as BudgetMeasure, Reached as BudgetReached, Spent};
pub use crate::checkpoint::{Damage, DamageKind, Level as CheckpointLevel};
pub use crate::clock::now_ms;

pub use crate::context::Fate;
pub use crate::data_dir::{DataDir, DATA_DIR_ENV};
pub use crate::digest::Digest;

pub use crate::action::shell::Sandbox;
pub use crate::engine::{
    budget_suggestion, ApproveRequest, BudgetView, Control, DriveOutcome, EditedAction, Observer,
    Progress, ResumeMode, RollbackReport, Shown, Silent, MAX_BATCH,
};
pub use crate::error::{Error, ErrorCode, Result};
pub use crate::event::limits_words as budget_words;
pub use crate::event::GcReport;

pub use crate::event::{ExportFormat, Filter as AuditFilter};
pub use crate::failure::RetryBudget;
pub use crate::ids::RunId;
pub use crate::input_file::{read as read_input_file, Links};
pub use crate::journal::{FileImage, IntentStatus, Resolution};
pub use crate::keys::{check_name as check_key_name, check_value as check_key_value};
pub use crate::keys::{Keyring, MemoryStore as MemorySecrets, Secret, SecretStore};
pub use crate::memory::{NewFact, Origin as FactOrigin, Settings as MemorySettings};

pub use crate::policy::{Context as PolicyContext, Decision, Policy, Risk, Verdict};
pub use crate::provider::{Price, DEFAULT_BASE_URL};

pub use crate::run::{RunEvent, RunState};
pub use crate::secrets::{prepare as prepare_secret_patterns, redact};
pub use crate::step::{StepKind, StepStatus};

pub use crate::store::DEFAULT_CONNECTIONS;
pub use crate::text::reveal;

/// Default lease: how long a worker owns a run without writing before another may take it over.
pub const DEFAULT_LEASE_MS: i64 = 30_000;

#[derive(Clone)]
pub struct Options {
    pub lease_ms: i64,
    pub retry: RetryBudget,
    /// The user's policy file; None: `policy.toml` in the config dir.
    pub policy_file: Option<std::path::PathBuf>,
    /// A policy of the embedder's own instead of the rules (tests of the machinery around it).
    pub policy: Option<Arc<dyn Policy>>,
    /// Where API keys are read from instead of the OS keyring.
    pub secrets: Option<Arc<dyn SecretStore>>,
    /// The `reins` program: external agents are given `reins mcp serve` (the profile memory) as
    /// an MCP server. None: they are not.
    pub memory_server: Option<std::path::PathBuf>,
    /// Database connections at most. A process that does one thing at a time (a Claude Code hook)
    /// opens one, and so saves opening and closing the others.
    pub connections: u32,
    /// A shared PostgreSQL database (`postgres://…`, team mode) instead of the SQLite file in the
    /// data dir. The data dir still holds this machine's audit head anchor and its logs.
    pub database: Option<String>,
    /// Team mode: workspaces on other machines this process's worker can reach (runs started on
    /// this machine are always its to carry out).
    pub workspace_roots: Vec<std::path::PathBuf>,
    /// Team mode: also carry out runs from before machines were recorded (they are started as
    /// runs from another machine: only with what this machine registered).
    pub adopt_legacy: bool,
    /// Team mode: listen for other machines' commits (LISTEN/NOTIFY) and wake at once. Without it
    /// (a connection pooler in transaction mode cannot carry LISTEN) workers and screens see other
    /// machines' changes at their next poll.
    pub listen: bool,
    /// Team mode: the keyring entry (`reins keys set NAME`) holding the database password. It is
    /// read when the store opens and never written anywhere; the URL then names no password.
    pub database_password_key: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            lease_ms: DEFAULT_LEASE_MS,
            retry: RetryBudget::default(),
            policy_file: None,
            policy: None,
            secrets: None,
            memory_server: None,
            connections: crate::store::DEFAULT_CONNECTIONS,
            database: None,
            workspace_roots: Vec::new(),
            adopt_legacy: false,
            listen: true,
            database_password_key: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("lease_ms", &self.lease_ms)
            .field("retry", &self.retry)
            .field("policy_file", &self.policy_file)
            .field("policy", &self.policy.as_ref().map(|p| p.version()))
            .field(
                "database",
                &self.database.as_deref().map(crate::store::redacted),
            )
            .finish_non_exhaustive()
    }
}

pub struct Reins {
    engine: Engine,
    data_dir: DataDir,
    policy_file: std::path::PathBuf,
    /// The policy read from the policy file (None: one given in code, as tests do).
    rules: Option<Arc<RulePolicy>>,
}

impl Reins {
    pub async fn open(data_dir: DataDir, options: Options) -> Result<Self> {
        data_dir.ensure()?;
        // The temp folders a killed Reins left (a confined process's private /tmp and staging
        // layer, a watch's marks) go, beside whatever this one does.
        tokio::task::spawn_blocking(crate::scratch::sweep);
        let store = match &options.database {
            None => Store::open_with(&data_dir.database(), options.connections).await?,
            Some(url) => {
                let url = match &options.database_password_key {
                    None => url.clone(),
                    Some(name) => {
                        let secrets = options
                            .secrets
                            .clone()
                            .unwrap_or_else(|| Arc::new(crate::keys::Keyring::new()));
                        let password = crate::keys::get_blocking(secrets, name)
                            .await?
                            .ok_or_else(|| {
                                Error::Invalid(format!(
                                    "the database password {name} is not in the keyring (`reins keys set {name}`)"
                                ))
                            })?;
                        crate::store::with_password(url, password.expose())?
                    }
                };
                let url = &url;
                Store::open_postgres(
                    url,
                    &data_dir.team_anchor(&crate::store::redacted(url)),
                    options.connections,
                    options.listen,
                )
                .await?
            }
        };
        // A team shares no filesystem: its blobs live in the shared database.
        let blobs = match &options.database {
            None => BlobStore::open(&data_dir.blobs())?,
            Some(_) => BlobStore::in_database(store.pool().clone(), store.path()),
        };
        let config_dir = crate::data_dir::config_dir()?;
        let policy_file = options
            .policy_file
            .clone()
            .unwrap_or_else(|| config_dir.join("policy.toml"));
        if options.policy_file.is_some() && !policy_file.exists() {
            return Err(Error::Invalid(format!(
                "the policy file {} does not exist (without --policy, {} is used if it exists)",
                policy_file.display(),
                config_dir.join("policy.toml").display()
            )));
        }
        let (policy, rules): (Arc<dyn Policy>, _) = match options.policy {
            Some(policy) => (policy, None),
            None => {
                let protected = Protected::new(data_dir.root(), &config_dir, &policy_file);
                let rules = Arc::new(RulePolicy::load(&policy_file, protected)?);
                (Arc::clone(&rules) as Arc<dyn Policy>, Some(rules))
            }
        };
        let mut engine = Engine::new(store, blobs, policy, options.lease_ms.max(1000))
            .with_reach(crate::worker::Reach::new(
                options.workspace_roots.clone(),
                options.adopt_legacy,
            ))
            .with_registry(Arc::new(crate::settings::agents::Registered))
            .with_retry_budget(options.retry)
            .with_agent_logs(data_dir.agent_logs())
            .with_containment(crate::contain::Setup {
                helper: crate::contain::launch::helper(),
                // Resolved: the helper refuses a place named through `..` or a link.
                reins: [data_dir.root(), config_dir.as_path(), policy_file.as_path()]
                    .into_iter()
                    .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned()))
                    .collect(),
                ..Default::default()
            });
        if let Some(secrets) = options.secrets {
            engine = engine.with_secrets(secrets);
        }
        if let Some(program) = options.memory_server {
            let default_policy = config_dir.join("policy.toml");
            engine = engine.with_reins_program(crate::agent::ReinsProgram {
                program,
                data_dir: data_dir.root().to_owned(),
                config_dir: config_dir.clone(),
                policy_file: Some(policy_file.clone()).filter(|p| *p != default_policy),
            });
        }
        let reins = Self {
            engine,
            data_dir,
            policy_file,
            rules,
        };
        reins.keep_prompts_for_export();
        Ok(reins)
    }

    /// Opens the data dir at `root` (or `REINS_DATA_DIR`, or the platform's) with default options.
    pub async fn open_at(root: Option<std::path::PathBuf>, options: Options) -> Result<Self> {
        Self::open(DataDir::resolve(root)?, options).await
    }

    pub fn data_dir(&self) -> &Path {
        self.data_dir.root()
    }

    /// The database file, or the shared database's URL (without its password) in team mode.
    pub fn database(&self) -> std::path::PathBuf {
        self.store().path().to_owned()
    }

    /// The user's policy file (it may not exist: then only the built-in defaults apply).
    pub fn policy_file(&self) -> &Path {
        &self.policy_file
    }

    /// Waits for the audit anchor to catch up, then closes the database.
    pub async fn close(&self) {
        self.engine.store().close().await;
    }

    /// Checks the database, the blob store, every run's checkpoints and the audit chain.
    pub async fn doctor(&self) -> Result<crate::engine::DoctorReport> {
        self.engine.doctor(self.data_dir.root()).await
    }

    /// Whether commands run confined in full on this machine, and how, in words ("confined
    /// (Landlock ABI 7, seccomp, mount layer)", or why not), and how an agent's network is
    /// filtered. Probed once.
    pub async fn containment(&self) -> (bool, String) {
        let setup = self.engine.containment().clone();
        match tokio::task::spawn_blocking(move || (setup.kernel(), setup.agents_network_once()))
            .await
        {
            Ok((crate::contain::Kernel::Full(said), agents)) => (true, format!("{said}; {agents}")),
            Ok((crate::contain::Kernel::Partial(said), agents)) => (
                false,
                format!("{said}; every command waits for you (your policy's [containment] unconfined_commands can relax this); {agents}"),
            ),
            Ok((crate::contain::Kernel::NoHelper, _)) => {
                (false, "unconfined: no confinement helper in this process".into())
            }
            Err(e) => (false, format!("not checked: {e}")),
        }
    }

    /// A blob by digest (a pre-image, an artifact), verified; None when it is not kept.
    pub async fn blob(&self, digest: &Digest) -> Result<Option<Vec<u8>>> {
        self.engine.blob(digest).await
    }

    fn store(&self) -> &Store {
        self.engine.store()
    }

    fn views(&self) -> crate::view::Views<'_> {
        crate::view::Views::new(&self.engine)
    }
}
