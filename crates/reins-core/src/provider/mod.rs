//! Talking to an OpenAI-compatible model server (`/v1/chat/completions`): local Ollama by default,
//! llama.cpp server, LM Studio, vLLM, or a hosted API.
//!
//! - [`stream`] reads a streamed answer (text deltas, tool-call deltas put together).
//! - [`client`] sends one request and sorts what goes wrong into transient (retried by the harness
//!   under the run's retry budget) and permanent (shown to the person, never retried).
//! - [`Settings`] is what a run stores about its model: base URL, model, window, output, timeout, and
//!   the *name* of the keyring entry holding the API key — never the key.

use serde::{Deserialize, Serialize};

pub mod client;
pub mod message;
pub mod stream;

pub use client::{Client, ProviderError};
pub use message::{Message, Role};
pub use stream::{Completion, ToolCall, Usage};

/// A local Ollama's OpenAI-compatible endpoint.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";
pub const DEFAULT_MODEL: &str = "llama3.1";

/// Prices in US dollars per million tokens, when the user configured them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Price {
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.input_per_mtok
            + usage.completion_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// The model a run talks to. Stored in the run's spec, so a resumed run uses the same server and
/// model; the API key is looked up in the OS keyring by `key` each time a worker starts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    pub base_url: String,
    pub model: String,
    /// Tokens the model can take in (prompt + output).
    pub context_window: usize,
    /// Tokens reserved for the answer (`max_tokens`).
    pub max_output: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// The longest the server may stay silent: before the first byte, and between two chunks.
    pub timeout_s: u64,
    /// The keyring entry holding the API key (`reins keys set NAME`); None: no key is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.into(),
            model: DEFAULT_MODEL.into(),
            context_window: 32_768,
            max_output: 4_096,
            temperature: None,
            timeout_s: 120,
            key: None,
            price: None,
        }
    }
}

impl Settings {
    /// Checks what a person typed, before a run is created with it.
    pub fn check(&self) -> Result<(), String> {
        let url = url::Url::parse(&self.base_url)
            .map_err(|e| format!("base URL {:?} is not a URL: {e}", self.base_url))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "base URL {:?} must be http:// or https://",
                self.base_url
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("the base URL must not carry credentials; store the key with `reins keys set NAME` and pass --key NAME".into());
        }
        if self.model.trim().is_empty() {
            return Err("the model name must not be empty".into());
        }
        if self.max_output == 0 || self.max_output >= self.context_window {
            return Err(format!(
                "max output ({}) must be above 0 and below the context window ({})",
                self.max_output, self.context_window
            ));
        }
        if self.timeout_s == 0 {
            return Err("the timeout must be at least 1 second".into());
        }
        if let Some(t) = self.temperature {
            if !(0.0..=2.0).contains(&t) {
                return Err(format!("temperature {t} must be between 0 and 2"));
            }
        }
        if let Some(k) = &self.key {
            crate::keys::check_name(k)?;
        }
        Ok(())
    }

    /// `{base}/chat/completions`, whether or not the base ends in a slash.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}
