//! Counting tokens the way the model will.
//!
//! OpenAI-family models are counted with their own BPE (tiktoken-rs: `o200k_base` for GPT-4o, 4.1,
//! 5 and the o-series; `cl100k_base` for GPT-4 and 3.5). Models whose tokenizer Reins does not
//! ship (Llama, Qwen, Mistral, Gemma, DeepSeek, … as served by Ollama or llama.cpp) are counted
//! with `o200k_base` plus 20%: their vocabularies are smaller, so the same text is rarely more than
//! that many tokens, and a budget computed this way errs on the side of leaving room.

use tiktoken_rs::CoreBPE;

/// The fallback's surcharge, in percent.
pub const FALLBACK_SURCHARGE_PCT: usize = 20;

pub trait TokenCounter: Send + Sync {
    fn count(&self, text: &str) -> usize;
    /// What counts, for the manifest (`o200k_base`, `o200k_base+20% (fallback for llama3.1)`).
    fn name(&self) -> &str;
}

pub struct Bpe {
    name: String,
    bpe: &'static CoreBPE,
    surcharge_pct: usize,
}

impl TokenCounter for Bpe {
    fn count(&self, text: &str) -> usize {
        let n = self.bpe.encode_ordinary(text).len();
        n + (n * self.surcharge_pct).div_ceil(100)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// The counter for `model` (an OpenAI-compatible model name).
pub fn for_model(model: &str) -> Bpe {
    let m = model.to_ascii_lowercase();
    let m = m.rsplit('/').next().unwrap_or(&m);
    let o200k = [
        "gpt-4o",
        "gpt-4.1",
        "gpt-4.5",
        "gpt-5",
        "o1",
        "o3",
        "o4",
        "chatgpt-4o",
    ];
    let cl100k = ["gpt-4", "gpt-3.5", "text-embedding"];
    if o200k.iter().any(|p| m.starts_with(p)) {
        Bpe {
            name: "o200k_base".into(),
            bpe: tiktoken_rs::o200k_base_singleton(),
            surcharge_pct: 0,
        }
    } else if cl100k.iter().any(|p| m.starts_with(p)) {
        Bpe {
            name: "cl100k_base".into(),
            bpe: tiktoken_rs::cl100k_base_singleton(),
            surcharge_pct: 0,
        }
    } else {
        Bpe {
            name: format!("o200k_base+{FALLBACK_SURCHARGE_PCT}% (fallback for {model})"),
            bpe: tiktoken_rs::o200k_base_singleton(),
            surcharge_pct: FALLBACK_SURCHARGE_PCT,
        }
    }
}
