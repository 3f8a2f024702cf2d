//! Talking to an OpenAI-compatible model server (`/v1/chat/completions`): local Ollama by default,
//! llama.cpp server, LM Studio, vLLM, or a hosted API. This holds what does not depend on the agent
//! loop: reading a streamed answer.

pub mod stream;
