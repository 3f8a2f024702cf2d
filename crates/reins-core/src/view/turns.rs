//! A model call as people read it: what the model said, the calls it made (each linked to the step
//! that carried it out), and what it cost. Built from the step's journaled result.

use serde::Serialize;

use super::runs::StepView;
use crate::step::StepKind;

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ModelTurnView {
    pub model: String,
    /// What the model said (Markdown as it wrote it).
    pub text: String,
    pub calls: Vec<CallView>,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub cost_usd: Option<f64>,
    pub finish_reason: Option<String>,
}

/// One tool call the model made.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallView {
    /// The function name the model used (`fs_read`).
    pub name: String,
    /// Its arguments as the model sent them (JSON text, possibly invalid).
    pub arguments: String,
    /// The step that carried it out, once there is one.
    pub step: Option<i64>,
}

impl ModelTurnView {
    /// The turn a model step's result records; None for other steps, or one still running.
    pub fn of(kind: StepKind, result: Option<&str>) -> Option<Self> {
        if kind != StepKind::ModelCall {
            return None;
        }
        let call: crate::engine::ModelCall = serde_json::from_str(result?).ok()?;
        let usage = call.reply.usage.as_ref();
        Some(Self {
            model: call.model,
            text: call.reply.text,
            calls: call
                .reply
                .tool_calls
                .into_iter()
                .map(|c| CallView {
                    name: c.name,
                    arguments: c.arguments,
                    step: None,
                })
                .collect(),
            tokens_in: usage.map(|u| u.prompt_tokens),
            tokens_out: usage.map(|u| u.completion_tokens),
            cost_usd: call.cost_usd,
            finish_reason: call.reply.finish_reason,
        })
    }
}

/// Links each model call to the step that carried it out: the agent runs a reply's calls in order,
/// as the steps after it, up to the next model call.
pub fn link_calls(steps: &mut [StepView]) {
    for i in 0..steps.len() {
        let Some(turn) = steps[i].model_turn.as_ref() else {
            continue;
        };
        let mut links = Vec::with_capacity(turn.calls.len());
        let mut next = i + 1;
        for call in &turn.calls {
            let carried_out_by = |s: &StepView| match crate::action::tool_for_function(&call.name) {
                Some(tool) => s.tool == tool,
                None if call.name == crate::action::ASK_USER => s.kind == StepKind::Question,
                // An MCP server's tool, named `server__tool` for the model.
                None if call.name.contains("__") => s.tool == crate::action::mcp::TOOL,
                None => false,
            };
            let found = steps[next..]
                .iter()
                .take_while(|s| s.kind != StepKind::ModelCall)
                .position(carried_out_by)
                .map(|k| next + k);
            links.push(found.map(|k| steps[k].seq));
            if let Some(k) = found {
                next = k + 1;
            }
        }
        if let Some(turn) = steps[i].model_turn.as_mut() {
            for (call, step) in turn.calls.iter_mut().zip(links) {
                call.step = step;
            }
        }
    }
}
