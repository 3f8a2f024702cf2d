//! Creating runs: the run row, its first checkpoint and the audit event commit together.

use crate::budget::Budget;
use crate::agent::NewRun;
use crate::event as ev;
use crate::checkpoint::{Checkpoint, Level, Meta};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::store::StoreError;
use crate::ids::RunId;
use crate::run::RunState;
use crate::store::write::Write;
use crate::store::{audit, audit::Actor, runs};
use crate::workspace::Workspace;

use super::commit::Change;
use super::{Engine, Silent};

impl Engine {
    /// Creates a queued run: the run row, its first checkpoint and the audit event commit
    /// together.
    pub async fn create_run(&self, new: &NewRun, workspace: &Workspace) -> Result<RunId> {
        self.insert_run(new, workspace, false, Budget::default()).await
    }

    /// A new run that may spend `budget` before it pauses and asks.
    pub async fn create_run_within(
        &self,
        new: &NewRun,
        workspace: &Workspace,
        budget: Budget,
    ) -> Result<RunId> {
        self.insert_run(new, workspace, false, budget).await
    }

    /// The run of an agent session that runs outside Reins (see `requests.rs`): the newest of
    /// its kind and name unless it finished (a cancelled one stays: the person stopped the
    /// session), else a new one — the one open run by its name.
    pub async fn session_run(
        &self,
        new: &NewRun,
        workspace: &Workspace,
        budget: Budget,
    ) -> Result<RunId> {
        if let Some(row) = runs::latest_named(self.store.pool(), new.kind, &new.name).await? {
            if !matches!(row.state, RunState::Succeeded | RunState::Failed) {
                return Ok(row.id);
            }
        }
        match self.insert_run(new, workspace, true, budget).await {
            // Another request of the session (calls side by side) created it first.
            Err(Error::Store(StoreError::Conflict(_))) => {
                match runs::latest_named(self.store.pool(), new.kind, &new.name).await? {
                    Some(row) => Ok(row.id),
                    None => Err(Error::Invalid(format!("{}: its run vanished", new.name))),
                }
            }
            other => other,
        }
    }

    async fn insert_run(
        &self,
        new: &NewRun,
        workspace: &Workspace,
        sole: bool,
        budget: Budget,
    ) -> Result<RunId> {
        let id = RunId::new();
        let now = now_ms();
        let spec_hash = crate::digest::Digest::of(new.spec.as_bytes());
        let compat = crate::compat::Compat::current(new.kind, new.version, &new.spec);
        let row = runs::RunRow {
            id,
            name: new.name.clone(),
            // Shown to people and kept in checkpoints; the agent reads its goal from the spec.
            goal: crate::secrets::redact(&new.goal).into_owned(),
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
        let mut change = Change::rows(vec![Write::RunInsert {
            row: Box::new(row),
            spec: new.spec.clone(),
            sole,
        }])
        .checkpoint(self.prepare(&first, Level::Task)?)
        .event(event);
        if !budget.is_empty() {
            change.rows.push(Write::Budget(budget));
            change.events.push(audit::Event::new(
                Actor::User,
                Some(id),
                ev::BudgetSet { limits: budget },
            ));
        }
        self.commit(Some(id), change, None, &Silent).await?;
        Ok(id)
    }
}
