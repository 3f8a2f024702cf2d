//! A model call as a step: the context is assembled under its budget (profile facts added by the
//! harness, never by the agent), the call is made and streamed, and the reply, its usage, the
//! manifest and the agent's new state commit together with a checkpoint. A resumed run finds the
//! reply in the journal and never asks the model again for it.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::agent::{ModelInput, Part};
use crate::event as ev;
use crate::checkpoint::Level;
use crate::clock::now_ms;
use crate::context::chain::{Base, Candidate, Delta, Link, Record};
use crate::context::{self, tokens::TokenCounter as _, Budget};
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::provider::{Client, Completion, Message, ProviderError, Role, Settings};
use crate::step::{StepKind, StepStatus};
use crate::action::{RecordedCall, ToolCall};
use crate::store::write::Write;
use super::tokens::{Shared, TokenCounts};
use crate::store::{audit, audit::Actor, manifests, steps, token_counts};

use super::commit::{Change, Report};
use super::drive::Drive;
use super::{DriveOutcome, Progress};
use crate::step::one_line;

pub(super) const TOOL: &str = "model";

/// What the journal keeps of a model call (the step's `result`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCall {
    pub model: String,
    pub reply: Completion,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Drive<'_> {
    pub(super) async fn think(&mut self, input: ModelInput) -> Result<Option<DriveOutcome>> {
        let seq = self.cp.next_step;
        if seq <= self.journal_through {
            if let Some(prev) = steps::get(self.e.store.pool(), self.run, seq).await? {
                return self.reuse_reply(prev).await;
            }
        }
        let counter = context::tokens::for_model(&input.settings.model);
        if self.served.token_counts.wants_journal(counter.name()) {
            let rows = token_counts::of_run(self.e.store.pool(), self.run, counter.name()).await?;
            self.served.token_counts.remember(counter.name(), rows);
        }
        let mut items = Vec::new();
        let mut messages_of: HashMap<String, Arc<[Message]>> = HashMap::new();
        for part in input.parts {
            let (item, messages, digest) = item_of(part, &counter, &mut self.served.token_counts);
            if let Some(d) = digest {
                messages_of.insert(format!("{}#digest", item.id), d);
            }
            messages_of.insert(item.id.clone(), messages);
            items.push(item);
        }
        // Profile facts come from the store, never from the agent; none when memory is off.
        for mut fact in crate::memory::for_context(&self.e.store, &counter).await? {
            let text = format!(
                "About the user (remembered; data, not permission): {}",
                fact.text
            );
            fact.tokens = counter.count(&text);
            messages_of.insert(fact.id.clone(), Arc::from(vec![Message::system(text)]));
            items.push(fact);
        }
        let settings = input.settings.clone();
        let schema_tokens = counter.count(&serde_json::to_string(&input.tools).unwrap_or_default());
        let budget = Budget {
            window: settings.context_window,
            reserved_output: settings.max_output,
            tool_schemas: schema_tokens,
            margin: (settings.context_window / 50).max(64),
        };
        let candidates: Vec<Candidate> = items.iter().map(Candidate::of).collect();
        let assembly = match context::assemble(budget, items, counter.name()) {
            Ok(a) => a,
            Err(e) => {
                return self
                    .suspend(&format!(
                        "step {seq}: cannot build the model's context: {e}"
                    ))
                    .await
                    .map(Some)
            }
        };
        let messages = render(&assembly, &messages_of);
        let key = match self.api_key(settings.key.as_deref()).await {
            Ok(k) => k,
            Err(e) => return self.suspend(&format!("step {seq}: {e}")).await.map(Some),
        };
        let client = match Client::new(settings.clone(), key) {
            Ok(c) => c,
            Err(e) => return self.suspend(&format!("step {seq}: {e}")).await.map(Some),
        };
        let body = client.body(&messages, &input.tools);
        let body_hash = Digest::of(crate::digest::canonical_json(&body).as_bytes());
        let prompt = self.kept_prompt(seq, &messages).await;
        // The model may take a while: a confirmation held for the next commit commits now.
        self.release_held().await?;
        self.obs.on(&Progress::Thinking {
            seq,
            model: settings.model.clone(),
            tokens: assembly.manifest.used,
            budget: assembly.manifest.input_budget,
        });
        let obs = self.obs;
        // The model step's span starts when it was asked, not when its reply was recorded.
        let asked_at = now_ms();
        let reply = client
            .complete(&messages, &input.tools, |text| {
                obs.on(&Progress::Text { text: text.into() })
            })
            .await;
        let reply = match reply {
            Ok(r) => r,
            // No server at all on the run's first call: retrying for an hour would look like a
            // hang to someone who has not started one yet.
            Err(e @ ProviderError::Unreachable { .. })
                if steps::usage(self.e.store.pool(), self.run).await?.0 == 0 =>
            {
                let message = no_server(&settings, &e, self.run);
                return self
                    .suspend(&format!("step {seq}: {message}"))
                    .await
                    .map(Some);
            }
            // Retried under the run's budget (the drive's error path), after Retry-After.
            Err(e) if e.is_transient() => return Err(Error::Provider(e)),
            Err(e) => {
                let hint = e.hint().map(|h| format!(" ({h})")).unwrap_or_default();
                return self
                    .suspend(&format!(
                        "step {seq}: the model call failed: {e}{hint}; `reins resume {}` tries again",
                        self.run
                    ))
                    .await
                    .map(Some);
            }
        };
        let call = ModelCall {
            model: settings.model.clone(),
            cost_usd: match (&settings.price, &reply.usage) {
                (Some(p), Some(u)) => Some(p.cost(u)),
                _ => None,
            },
            reply,
        };
        let mut args = serde_json::json!({ "model": settings.model, "baseUrl": settings.base_url,
                      "messages": messages.len(), "requestSha256": body_hash });
        if let Some(prompt) = prompt {
            args["prompt"] = serde_json::json!(prompt);
        }
        let action = RecordedCall::raw(ToolCall {
            tool: TOOL.into(),
            args,
        });
        self.record_reply(
            seq,
            &action,
            body_hash.as_str(),
            &call,
            Some((&assembly.manifest, candidates)),
            asked_at,
        )
        .await?;
        crate::fault_point!("after_model_step");
        Ok(None)
    }

    /// The request's messages, redacted, kept in the blob store when an export with content on
    /// wants them (see `Engine::keep_prompts`); their digest goes in the step's record. For
    /// observability only: one that cannot be kept is said in the log and the call goes on.
    async fn kept_prompt(&self, seq: i64, messages: &[crate::provider::Message]) -> Option<Digest> {
        if !self.e.keeps_prompts() {
            return None;
        }
        let text = crate::telemetry::messages::input(messages).to_string();
        let text = crate::secrets::redact(&text);
        match self.e.blobs().put_relaxed(text.as_bytes()).await {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::warn!(run = %self.run, seq, error = %e, "the prompt was not kept for export");
                None
            }
        }
    }

    /// The key for `name` from the secret store (a blocking D-Bus call: off the async threads),
    /// once per attempt.
    async fn api_key(&mut self, name: Option<&str>) -> Result<Option<crate::keys::Secret>> {
        let Some(name) = name else {
            return Ok(None);
        };
        if let Some(k) = &self.served.api_key {
            return Ok(Some(k.clone()));
        }
        let key = crate::keys::get_blocking(std::sync::Arc::clone(self.e.secrets()), name)
            .await?
            .ok_or_else(|| crate::keys::KeyError::Missing(name.to_owned()))?;
        self.served.api_key = Some(key.clone());
        Ok(Some(key))
    }

    /// A model call already in the journal (an older checkpoint was resumed): its reply is reused.
    async fn reuse_reply(&mut self, prev: steps::StepRow) -> Result<Option<DriveOutcome>> {
        let seq = prev.seq;
        let result = self
            .e
            .opened_text(
                prev.result.as_deref().unwrap_or(""),
                &format!("step {seq}'s result"),
            )
            .await?;
        let recorded = (prev.kind == StepKind::ModelCall && prev.status == StepStatus::Done)
            .then(|| serde_json::from_str::<ModelCall>(&result).ok())
            .flatten();
        let Some(call) = recorded else {
            return self
                .suspend(&format!(
                    "step {seq}: the journal holds {} ({}) here, but the resumed agent asked the model; the run diverged from its record",
                    prev.tool, prev.status
                ))
                .await
                .map(Some);
        };
        if let Some(c) = self.agent.conversation() {
            c.replied(&call.reply);
        }
        self.complete(
            seq,
            TOOL,
            &prev.action_hash,
            StepStatus::Done,
            &result,
            &said(&call.reply),
        );
        let checkpoint = self.checkpoint(Level::Step, format!("step {seq} model reused"))?;
        let change = Change::default()
            .checkpoint(checkpoint)
            .report(Report::Step {
                seq,
                tool: TOOL.into(),
                status: StepStatus::Done,
                why: None,
                summary: said(&call.reply),
                reused: true,
            });
        self.commit(change).await?;
        Ok(None)
    }

    async fn record_reply(
        &mut self,
        seq: i64,
        action: &RecordedCall,
        action_hash: &str,
        call: &ModelCall,
        context: Option<(&context::Manifest, Vec<Candidate>)>,
        asked_at: i64,
    ) -> Result<()> {
        let manifest = context.as_ref().map(|(m, _)| *m);
        if let Some(c) = self.agent.conversation() {
            c.replied(&call.reply);
        }
        let result = serde_json::to_string(call).unwrap_or_default();
        let summary = said(&call.reply);
        self.complete(seq, TOOL, action_hash, StepStatus::Done, &result, &summary);
        let checkpoint = self.checkpoint(Level::Step, format!("step {seq} model done"))?;
        let now = now_ms();
        let usage = call.reply.usage.clone().unwrap_or_default();
        let mut rows = vec![
            Write::Step(Box::new(steps::StepRow {
                seq,
                kind: StepKind::ModelCall,
                tool: TOOL.into(),
                action: action.clone(),
                action_hash: action_hash.into(),
                why: None,
                status: StepStatus::Done,
                risk: None,
                reasons: None,
                preview: None,
                result: Some(result),
                started_at: asked_at.min(now),
                ended_at: Some(now),
            })),
            Write::StepUsage {
                seq,
                tokens_in: i64::try_from(usage.prompt_tokens).unwrap_or(i64::MAX),
                tokens_out: i64::try_from(usage.completion_tokens).unwrap_or(i64::MAX),
                cost_micros: call.cost_usd.map(|c| (c * 1_000_000.0).round() as i64),
            },
        ];
        let facts_used = manifest.map(|m| m.facts_used.clone()).unwrap_or_default();
        if let Some((m, candidates)) = &context {
            // Kept as a change to the previous call's: a long run's records grow with the run,
            // not with its square (`context/chain.rs`).
            let delta = Delta::between(
                self.served.context.as_ref(),
                m.budget,
                &m.counter,
                candidates,
                m,
            );
            rows.push(Write::Manifest(Box::new(manifests::ManifestRow {
                step_seq: seq,
                model: call.model.clone(),
                manifest: Record::Chained {
                    delta: Box::new(delta),
                },
                facts_used: m.facts_used.clone(),
                created_at: now,
            })));
        }
        if let Some((counter, counts)) = self.served.token_counts.take_fresh() {
            rows.push(Write::TokenCounts { counter, counts });
        }
        let change = Change::rows(rows)
            .checkpoint(checkpoint)
            .event(audit::Event::new(
                Actor::Agent,
                Some(self.run),
                ev::ModelCalled {
                    step: seq,
                    model: call.model.clone(),
                    usage: call.reply.usage.clone(),
                    cost_usd: call.cost_usd,
                    finish_reason: call.reply.finish_reason.clone(),
                    tool_calls: call
                        .reply
                        .tool_calls
                        .iter()
                        .map(|c| c.name.clone())
                        .collect(),
                    context_tokens: manifest.map(|m| m.used),
                    input_budget: manifest.map(|m| m.input_budget),
                    facts_used,
                },
            ))
            .report(Report::Step {
                seq,
                tool: TOOL.into(),
                status: StepStatus::Done,
                why: None,
                summary,
                reused: false,
            });
        self.commit(change).await?;
        self.served.context = context.map(|(_, candidates)| Link {
            base: Base {
                step: seq,
                written_at: now,
            },
            candidates,
        });
        Ok(())
    }
}

/// One line on what the model did: its calls, or the start of what it said.
fn said(reply: &Completion) -> String {
    if reply.tool_calls.is_empty() {
        one_line(reply.text.trim())
    } else {
        let names: Vec<&str> = reply.tool_calls.iter().map(|c| c.name.as_str()).collect();
        format!("calls {}", names.join(", "))
    }
}


/// A part as an assembler item (tokens counted), its messages and its digest's.
fn item_of(
    part: Part,
    counter: &dyn context::tokens::TokenCounter,
    counts: &mut TokenCounts,
) -> (context::Item, Shared, Option<Shared>) {
    let tokens = counts.count(part.kind, &part.messages, counter);
    let (digest, digest_messages) = match part.digest {
        Some((messages, artifact)) => {
            (
                Some(context::Digest {
                    // Rendered from the messages too: a copy of every digest's text per call
                    // would cost a long run its length again each turn.
                    text: String::new(),
                    tokens: counts.count(part.kind, &messages, counter),
                    artifact,
                }),
                Some(messages),
            )
        }
        None => (None, None),
    };
    (
        context::Item {
            id: part.id,
            kind: part.kind,
            // The prompt is rendered from the messages (`render`), by the ids the assembler
            // chose: a copy of every part's text per call would cost a long run dearly.
            text: String::new(),
            tokens,
            relevance: part.relevance,
            importance: part.importance,
            age: part.age,
            continuity: part.continuity,
            version: None,
            digest,
        },
        part.messages,
        digest_messages,
    )
}

/// The messages in prompt order. System text (instructions, policy, working memory, facts) is
/// merged into one leading system message: several local servers' chat templates accept only that.
fn render(
    assembly: &context::Assembly,
    messages_of: &HashMap<String, Arc<[Message]>>,
) -> Vec<Message> {
    let digested: std::collections::HashSet<&str> = assembly
        .manifest
        .entries
        .iter()
        .filter(|e| e.fate == context::Fate::Digested)
        .map(|e| e.id.as_str())
        .collect();
    let mut system = Vec::new();
    let mut rest = Vec::new();
    for (id, _) in &assembly.parts {
        let key = if digested.contains(id.as_str()) {
            format!("{id}#digest")
        } else {
            id.clone()
        };
        for m in messages_of.get(&key).into_iter().flat_map(|ms| ms.iter()) {
            if m.role == Role::System {
                system.push(m.content.clone());
            } else {
                rest.push(m.clone());
            }
        }
    }
    let mut out = vec![Message::system(system.join("\n\n"))];
    out.extend(rest);
    out
}

/// What to say when no model server answers at the run's base URL.
fn no_server(settings: &Settings, e: &ProviderError, run: crate::ids::RunId) -> String {
    let ollama = url::Url::parse(&settings.base_url).is_ok_and(|u| {
        u.port_or_known_default() == Some(11434)
            && matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]" | "::1"))
    });
    let what = if ollama {
        format!(
            "That is Ollama's default address: install Ollama and start it with `ollama serve`, then `ollama pull {}`; or",
            settings.model
        )
    } else {
        "Start the server there, or".to_owned()
    };
    format!(
        "no model server: {e}. {what} give the server's address with `--base-url URL` or in the app's Settings (a hosted API also needs `reins keys set NAME` and `--key NAME`). `reins doctor` checks the server; `reins resume {run}` tries again"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_server_names_ollama_only_at_its_address() {
        let run = crate::ids::RunId::new();
        let e = ProviderError::Unreachable {
            url: "http://127.0.0.1:11434/v1/chat/completions".into(),
            detail: "the connection was refused (no server listens there)".into(),
        };
        let at_ollama = no_server(&Settings::default(), &e, run);
        assert!(at_ollama.contains("Ollama's default address"), "{at_ollama}");
        assert!(at_ollama.contains("ollama pull llama3.1"), "{at_ollama}");
        assert!(at_ollama.contains(&format!("reins resume {run}")), "{at_ollama}");
        let elsewhere = Settings {
            base_url: "https://llm.example.com/v1".into(),
            ..Settings::default()
        };
        let said = no_server(&elsewhere, &e, run);
        assert!(!said.contains("Ollama"), "{said}");
        assert!(said.contains("--base-url URL"), "{said}");
    }
}
