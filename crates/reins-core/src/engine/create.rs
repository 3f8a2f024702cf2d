//! Creating runs: the run row, its first checkpoint and the audit event commit together.

use crate::agent::script::Plan;
use crate::event as ev;
use crate::checkpoint::{Checkpoint, Level, Meta};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::run::RunState;
use crate::store::write::Write;
use crate::store::{audit, audit::Actor, runs};
use crate::workspace::Workspace;

use super::commit::Change;
use super::{Engine, Silent};

/// What a new run is made of.
struct NewRun<'a> {
    kind: &'static str,
    version: &'static str,
    name: &'a str,
    goal: &'a str,
    spec: String,
}

impl Engine {
    /// Creates a queued run from a script plan: the run row, its first checkpoint and the audit event
    /// commit together.
    pub async fn create_script_run(&self, plan: &Plan, workspace: &Workspace) -> Result<RunId> {
        self.create_run(
            NewRun {
                kind: crate::agent::script::KIND,
                version: crate::agent::script::VERSION,
                name: &plan.name,
                goal: &plan.goal,
                spec: plan.to_json(),
            },
            workspace,
            false,
        )
        .await
    }

    /// Creates a queued run for the LLM agent.
    pub async fn create_llm_run(
        &self,
        spec: &crate::agent::llm::Spec,
        workspace: &Workspace,
    ) -> Result<RunId> {
        spec.settings.check().map_err(Error::Invalid)?;
        self.create_run(
            NewRun {
                kind: crate::agent::llm::KIND,
                version: crate::agent::llm::VERSION,
                name: &spec.name,
                goal: &spec.goal,
                spec: spec.to_json(),
            },
            workspace,
            false,
        )
        .await
    }

    /// Creates a queued run of an external agent (ACP).
    pub async fn create_acp_run(
        &self,
        spec: &crate::agent::acp::Spec,
        workspace: &Workspace,
    ) -> Result<RunId> {
        self.create_run(
            NewRun {
                kind: crate::agent::acp::KIND,
                version: crate::agent::acp::VERSION,
                name: &spec.name,
                goal: &spec.goal,
                spec: spec.to_json(),
            },
            workspace,
            false,
        )
        .await
    }

    /// Creates a queued run of an agent that runs outside Reins (see `hooked.rs`): the one open
    /// run by its name — while another is open, [`StoreError::Conflict`](crate::store::StoreError).
    pub(super) async fn create_external_run(
        &self,
        kind: &'static str,
        version: &'static str,
        name: &str,
        goal: &str,
        spec: String,
        workspace: &Workspace,
    ) -> Result<RunId> {
        self.create_run(
            NewRun {
                kind,
                version,
                name,
                goal,
                spec,
            },
            workspace,
            true,
        )
        .await
    }

    async fn create_run(
        &self,
        new: NewRun<'_>,
        workspace: &Workspace,
        sole: bool,
    ) -> Result<RunId> {
        let id = RunId::new();
        let now = now_ms();
        let spec_hash = crate::digest::Digest::of(new.spec.as_bytes());
        let compat = crate::compat::Compat::current(new.kind, new.version, &new.spec);
        let row = runs::RunRow {
            id,
            name: new.name.to_owned(),
            // Shown to people and kept in checkpoints; the agent reads its goal from the spec.
            goal: crate::secrets::redact(new.goal).into_owned(),
            workspace: workspace.root().to_string_lossy().into_owned(),
            agent_kind: new.kind.into(),
            compat,
            state: RunState::Queued,
            state_version: 0,
            fence: 0,
            owner: None,
            lease_until: None,
            last_error: None,
            created_at: now,
            updated_at: now,
            not_before: None,
            machine: Some(crate::worker::host_name()),
        };
        let first = Checkpoint {
            goal: row.goal.clone(),
            next_step: 1,
            meta: Meta {
                written_at: now,
                note: "created".into(),
                ..Meta::default()
            },
            ..Checkpoint::default()
        };
        let event = audit::Event::new(
            Actor::User,
            Some(id),
            ev::RunCreated {
                name: row.name.clone(),
                goal: row.goal.clone(),
                workspace: row.workspace.clone(),
                agent_kind: row.agent_kind.clone(),
                spec_hash,
            },
        );
        let change = Change::rows(vec![Write::RunInsert {
            row: Box::new(row),
            spec: new.spec,
            sole,
        }])
            .checkpoint(self.prepare(&first, Level::Task)?)
            .event(event);
        self.commit(Some(id), change, None, &Silent).await?;
        Ok(id)
    }
}
