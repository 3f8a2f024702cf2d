//! Reins as an MCP server (`reins mcp serve`): the user's profile memory offered to other agents, by
//! the same rules that govern Reins' own. `memory_recall` answers the active facts that fit a query
//! (nothing when memory is off); `memory_suggest` proposes a fact, which memory keeps only in its
//! categories and above its threshold (else it waits for the user as a suggestion), never a secret.
//! Started for an external agent's run, it names the run and the agent in each fact's provenance.
//! Every call is audited.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::event::{self as ev, Actor};
use crate::ids::RunId;
use crate::memory::{self, NewFact, Origin, Remembered};
use crate::store::change::Change;
use crate::store::{audit, Store};

/// Most facts one recall answers.
const MAX_RECALL: usize = 50;

/// Who is asking: set when Reins starts the server for a run's agent.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub run: Option<RunId>,
}

#[derive(Clone)]
pub struct MemoryServer {
    store: Store,
    caller: Arc<Caller>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    /// Words to look for in the facts (category, key or value); empty: every fact.
    #[serde(default)]
    query: String,
    /// Most facts to return (default 10, at most 50).
    #[serde(default)]
    #[schemars(with = "u32")]
    limit: Option<usize>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SuggestArgs {
    /// One of the user's allowed categories (language, style, expertise, format, workflow, preference).
    category: String,
    /// A short name for the fact, e.g. `preferred_language`.
    key: String,
    /// The fact itself, in a few words.
    value: String,
    /// 0 to 1: how sure you are the user meant this to be remembered.
    #[serde(default)]
    #[schemars(with = "f64")]
    confidence: Option<f64>,
    /// The user's words the fact comes from.
    #[serde(default)]
    #[schemars(with = "String")]
    source: Option<String>,
}

// Optional fields are described with one `type` each (not `["number", "null"]`): clients that map
// tool schemas onto a single-type dialect, as Gemini-based agents do, accept them.
fn schema<T: schemars::JsonSchema>() -> Arc<serde_json::Map<String, Value>> {
    let v = crate::action::clean_schema(schemars::Schema::to_value(schemars::schema_for!(T)));
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

impl MemoryServer {
    pub fn new(store: Store, caller: Caller) -> Self {
        Self {
            store,
            caller: Arc::new(caller),
        }
    }

    /// Serves on this process' stdin and stdout until the client goes away.
    pub async fn serve_stdio(self) -> Result<(), String> {
        self.serve_over(rmcp::transport::io::stdio()).await
    }

    /// Serves over `transport` (stdio, a link's connection) until the client goes away.
    pub async fn serve_over<T, E, A>(self, transport: T) -> Result<(), String>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let running = self
            .serve(transport)
            .await
            .map_err(|e| format!("the MCP client did not initialize: {e}"))?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP connection failed: {e}"))
    }

    fn tools() -> Vec<Tool> {
        vec![
            Tool::new(
                "memory_recall",
                "The user's profile facts (preferences, style, expertise…) that fit a query, as `category.key: value` lines. Nothing when the user switched memory off.",
                schema::<RecallArgs>(),
            )
            .with_annotations(ToolAnnotations::new().read_only(true).open_world(false)),
            Tool::new(
                "memory_suggest",
                "Propose a fact about the user for their profile memory. It is kept only in an allowed category and when confident enough; otherwise the user is asked. Secrets are refused.",
                schema::<SuggestArgs>(),
            )
            .with_annotations(
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(false)
                    .open_world(false),
            ),
        ]
    }

    /// `memory_recall`: the text answered, and the facts it named.
    pub async fn recall(&self, args: &Value) -> Result<String, String> {
        let a: RecallArgs = serde_json::from_value(args.clone())
            .map_err(|e| format!("memory_recall: invalid arguments: {e}"))?;
        let settings = memory::settings(&self.store).await.map_err(|e| e.to_string())?;
        let (text, ids) = if !settings.enabled {
            (
                "memory is switched off by the user: nothing is recalled".to_owned(),
                Vec::new(),
            )
        } else {
            let limit = a.limit.unwrap_or(10).clamp(1, MAX_RECALL);
            let facts = memory::list(&self.store, None, None)
                .await
                .map_err(|e| e.to_string())?;
            let words: Vec<String> = a
                .query
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() > 1)
                .map(str::to_lowercase)
                .collect();
            let mut scored: Vec<(usize, &crate::store::memory::FactRow)> = facts
                .iter()
                .filter(|f| settings.categories.iter().any(|c| c == &f.category))
                .map(|f| {
                    let hay = format!("{} {} {}", f.category, f.key, f.value).to_lowercase();
                    (words.iter().filter(|w| hay.contains(w.as_str())).count(), f)
                })
                .filter(|(score, _)| words.is_empty() || *score > 0)
                .collect();
            scored.sort_by_key(|s| std::cmp::Reverse(s.0));
            scored.truncate(limit);
            let lines: Vec<String> = scored
                .iter()
                .map(|(_, f)| format!("{}.{}: {}", f.category, f.key, f.value))
                .collect();
            let ids = scored.iter().map(|(_, f)| f.id.clone()).collect();
            let text = if lines.is_empty() {
                "no profile fact fits".to_owned()
            } else {
                lines.join("\n")
            };
            (text, ids)
        };
        self.audit(ev::MemoryServed {
            tool: "memory_recall".into(),
            agent: self.agent().await,
            query: Some(a.query),
            facts: ids,
            outcome: if settings.enabled { "answered" } else { "memory is off" }.into(),
        })
        .await?;
        Ok(text)
    }

    /// `memory_suggest`: what the agent is told.
    pub async fn suggest(&self, args: &Value) -> Result<String, String> {
        let a: SuggestArgs = serde_json::from_value(args.clone())
            .map_err(|e| format!("memory_suggest: invalid arguments: {e}"))?;
        if a.confidence.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
            return Err("memory_suggest: `confidence` must be between 0 and 1".into());
        }
        let agent = self.agent().await;
        let by = match &agent {
            Some(agent) => format!("{agent}, over MCP"),
            None => "an MCP client".to_owned(),
        };
        let source = Some(match &a.source {
            Some(s) => format!("{by}: {s}"),
            None => by,
        });
        let outcome = memory::remember(
            &self.store,
            NewFact {
                category: a.category.clone(),
                key: a.key.clone(),
                value: a.value,
                confidence: a.confidence,
                origin: Origin::Agent {
                    run: self.caller.run,
                    step: None,
                    source,
                },
            },
        )
        .await;
        let (answer, said) = match outcome {
            Ok(Remembered::Stored { fact }) => (
                Ok(format!("remembered {}.{} (version {})", fact.category, fact.key, fact.version)),
                "stored",
            ),
            Ok(Remembered::Unchanged { fact }) => (
                Ok(format!("already remembered {}.{}; nothing changed", fact.category, fact.key)),
                "unchanged",
            ),
            Ok(Remembered::Suggested { suggestion }) => (
                Ok(format!(
                    "not stored: {}; suggested to the user, who may accept it",
                    suggestion.reason
                )),
                "suggested to the user",
            ),
            Err(e) => (Err(format!("refused: {e}")), "refused"),
        };
        self.audit(ev::MemoryServed {
            tool: "memory_suggest".into(),
            agent,
            query: Some(format!("{}.{}", a.category, a.key)),
            facts: Vec::new(),
            outcome: said.into(),
        })
        .await?;
        answer
    }

    /// The run's agent as the run knows it now ("qwen-code 0.24.4"): read at each call, since an
    /// agent starts its servers before it has said who it is.
    async fn agent(&self) -> Option<String> {
        let run = self.caller.run?;
        let row = crate::store::runs::get(self.store.pool(), run).await.ok()?;
        Some(
            row.compat
                .external_agent
                .as_ref()
                .map(crate::compat::ExternalAgent::label)
                .unwrap_or(row.agent_kind),
        )
    }

    async fn audit(&self, payload: ev::MemoryServed) -> Result<(), String> {
        let served = audit::Event::new(Actor::Agent, self.caller.run, payload);
        self.store
            .apply(None, Change::default().event(served), None)
            .await
            .map(|_| ())
            .map_err(|e| format!("the call could not be audited, so it was not answered: {e}"))
    }
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("reins-memory", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The user's profile memory, kept by Reins: recall facts about the user before guessing their preferences; suggest a fact when the user states one.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Self::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let outcome = match request.name.as_ref() {
            "memory_recall" => self.recall(&args).await,
            "memory_suggest" => self.suggest(&args).await,
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool {other:?}: the tools are memory_recall and memory_suggest"),
                    Some(json!({"tool": other})),
                ))
            }
        };
        Ok(match outcome {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
        }
        .into())
    }
}
