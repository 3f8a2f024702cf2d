//! Steps 1–3 of the protocol for one proposed call, and the gate: validate (schema, size, the path
//! jail), then gather what the decision needs — the addresses a host resolves to, the plan of a
//! file change — and let `decide` rule: deny, review, a grant's run, or run. An invalid proposal is
//! an error result for the agent, never a prompt for a person.

use crate::event::{self as ev, Actor};
use crate::digest::Digest;
use crate::error::Result;
use crate::policy::shell::Place;
use crate::step::StepStatus;
use crate::store::grants::{self, GrantRow};
use crate::store::write::Write;
use crate::store::{audit, steps};
use crate::action::{Action, RecordedCall, ToolCall};
use crate::tools;

use super::commit::Change;
use super::decide::{self, Facts, Ruling};
use super::drive::Drive;
use super::record::StepRecord;
use super::DriveOutcome;

impl Drive<'_> {
    /// Where commands run and which paths are protected, for the shell classifier and grants.
    pub(super) fn place(&self) -> Place<'_> {
        Place {
            root: self.ws.root(),
            protected: self.e.policy.protected(),
        }
    }

    /// Steps 1–9 for one proposed call. `Some(outcome)` when the drive must stop.
    pub(super) async fn step(
        &mut self,
        call: ToolCall,
        why: Option<String>,
        bound: Option<i64>,
    ) -> Result<Option<DriveOutcome>> {
        // The agent's reason is for people: a secret in it is never stored.
        let why = why.map(|w| crate::secrets::redact(&w).into_owned());
        let call = self.complete_mcp(call);
        let seq = self.cp.next_step;
        let parsed = Action::parse(&call, &self.ws);
        let recorded = match &parsed {
            Ok(a) => RecordedCall::of(a),
            Err(_) => RecordedCall::raw(call.clone()),
        };
        let action_hash = Digest::of(recorded.text().as_bytes());

        // Resuming from an earlier checkpoint: this step may already be in the journal.
        if seq <= self.journal_through {
            if let Some(prev) = steps::get(self.e.store.pool(), self.run, seq).await? {
                return self.reuse(prev, &call, action_hash.as_str()).await;
            }
        }

        // 1. Validate
        let action = match parsed {
            Ok(a) => a,
            Err(err) => {
                let rec = StepRecord {
                    seq,
                    tool: &call.tool,
                    action: &recorded,
                    action_hash: action_hash.as_str(),
                    why: why.as_deref(),
                    verdict: None,
                    preview: None,
                    reopen: false,
                    approval: None,
                };
                return self
                    .record(&rec, StepStatus::Invalid, false, &err.to_string())
                    .await
                    .map(|_| None);
            }
        };
        self.proceed(seq, why.as_deref(), &action, bound).await
    }

    /// Steps 2–9 for a valid action: gather the facts, let `decide` rule, and do what it says.
    async fn proceed(
        &mut self,
        seq: i64,
        why: Option<&str>,
        action: &Action,
        bound: Option<i64>,
    ) -> Result<Option<DriveOutcome>> {
        let recorded = RecordedCall::of(action);
        let action_hash = action.hash();
        let mut rec = StepRecord {
            seq,
            tool: action.tool(),
            action: &recorded,
            action_hash: action_hash.as_str(),
            why,
            verdict: None,
            preview: None,
            reopen: false,
            approval: None,
        };
        let plan = tools::plan_files(action, &self.ws).map_err(|e| e.to_string());
        // A step other than a file effect may wait (a command staged for review, a request, an
        // outside tool): a confirmation held for the next commit commits first.
        if !matches!(plan, Ok(Some(_))) {
            self.release_held().await?;
        }
        // A request's host is resolved first: the policy judges the addresses.
        let resolved = match tools::fetch::addresses_of(action).await {
            Ok(r) => r,
            Err(e) => {
                return self
                    .record(&rec, StepStatus::Failed, false, &e)
                    .await
                    .map(|_| None)
            }
        };
        let kernel = self.e.contain.kernel();
        let ruling = decide::decide(
            &Facts {
                action,
                resolved: &resolved,
                plan: plan.as_ref().map(Option::as_ref).map_err(String::as_str),
                unconfined: match &kernel {
                    crate::contain::Kernel::Partial(why) => Some(why),
                    _ => None,
                },
            },
            self.e.policy(),
            self.place(),
        );
        rec.verdict = Some(ruling.verdict());
        match &ruling {
            Ruling::Failed { error, .. } => self
                .record(&rec, StepStatus::Failed, false, error)
                .await
                .map(|_| None),
            Ruling::Denied {
                preview, result, ..
            } => {
                rec.preview = Some(preview);
                self.record(&rec, StepStatus::Denied, false, result)
                    .await
                    .map(|_| None)
            }
            Ruling::Ask { verdict, preview } => {
                rec.preview = Some(preview);
                let plan = plan.ok().flatten();
                if let Some(earlier) = self.already_applied(action, plan.as_ref()).await? {
                    return self.confirm_applied(&rec, earlier).await.map(|_| None);
                }
                if let Some(permission) = bound {
                    if self.permitted(permission, seq, action).await? {
                        return self.execute(&rec, action, plan, &resolved).await;
                    }
                }
                let live = self.live_grants(action).await?;
                match decide::granted(action, verdict.risk, &live, self.place()) {
                    Some(grant) => {
                        self.use_grant(grant, seq, action_hash.as_str()).await?;
                        self.execute(&rec, action, plan, &resolved).await
                    }
                    None => match action {
                        Action::Shell(cmd) => self.park_command(&rec, cmd, None).await.map(Some),
                        _ => self.park(&rec, plan.as_ref(), None).await.map(Some),
                    },
                }
            }
            Ruling::Run { preview, .. } => {
                rec.preview = Some(preview);
                if let Action::Shell(cmd) = action {
                    if self.always_staged(cmd) {
                        return self.park_command(&rec, cmd, None).await.map(Some);
                    }
                }
                self.execute(&rec, action, plan.ok().flatten(), &resolved)
                    .await
            }
        }
    }

    /// Whether step `permission` of this run granted an external agent's request that reported
    /// exactly `action` (the same tool, path and content): then `action` was reviewed there, and
    /// runs under that decision, audited as such.
    async fn permitted(&mut self, permission: i64, seq: i64, action: &Action) -> Result<bool> {
        let Some(step) = steps::get(self.e.store.pool(), self.run, permission).await? else {
            return Ok(false);
        };
        if step.tool != crate::action::permission::TOOL || step.status != StepStatus::Done {
            return Ok(false);
        }
        // A permission asked again (by an agent restarted before it heard the grant) is bound
        // by the action it reports.
        let wanted = match action {
            Action::Permission(p) => p.implied.as_deref().map(Action::hash),
            other => Some(other.hash()),
        };
        let granted = match Action::parse(step.action.call(), &self.ws) {
            Ok(Action::Permission(p)) => {
                wanted.is_some() && p.implied.as_deref().map(Action::hash) == wanted
            }
            _ => false,
        };
        if granted {
            let change = Change::default().event(audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::BoundToPermission {
                    step: seq,
                    permission,
                    action_hash: action.hash().to_string(),
                },
            ));
            self.commit(change).await?;
        }
        Ok(granted)
    }

    /// Live grants for the action's tool that may apply to this run; for an external agent's
    /// permission, also those for the action it reports (granted as that action).
    async fn live_grants(&self, action: &Action) -> Result<Vec<GrantRow>> {
        let root = self.ws.root().to_string_lossy();
        let pool = self.e.store.pool();
        let mut live = grants::live_for(pool, action.tool(), self.run, &root).await?;
        if let Action::Permission(p) = action {
            if let Some(implied) = p.implied.as_deref() {
                live.extend(grants::live_for(pool, implied.tool(), self.run, &root).await?);
            }
        }
        Ok(live)
    }

    /// Counts a grant's use, audited, before the action it allows runs.
    async fn use_grant(&mut self, grant: &GrantRow, seq: i64, action_hash: &str) -> Result<()> {
        let change =
            Change::rows(vec![Write::GrantUsed(grant.id.clone())]).event(audit::Event::new(
                Actor::Harness,
                Some(self.run),
                ev::GrantUsed {
                    grant: grant.id.clone(),
                    scope: grant.scope,
                    matcher: grant.matcher,
                    step: seq,
                    action_hash: action_hash.into(),
                },
            ));
        self.commit(change).await?;
        Ok(())
    }
}
