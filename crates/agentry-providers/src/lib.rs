//! # agentry-providers
//!
//! Model providers for agentry, each a [`ChatModel`](agentry_core::model::ChatModel):
//!
//! - [`OpenAiCompatible`]: OpenAI Chat Completions and the servers that speak
//!   it (Ollama, vLLM, the llama.cpp server). Reads `OPENAI_API_KEY` and `OPENAI_BASE_URL`.
//! - [`Anthropic`]: the Anthropic Messages API. Reads `ANTHROPIC_API_KEY`.
//!
//! Both stream over SSE, support parallel tool calls, report usage, map tool
//! names to provider-safe wire names and back, and retry 429, 5xx and
//! connection failures with backoff, honouring `retry-after`.
//!
//! [`net::HttpClient`] is the capability-checked HTTP client tools use.

mod anthropic;
mod embeddings;
pub mod net;
mod openai;
mod secret;
mod structured;
mod transport;
mod wire_names;

pub use anthropic::{ANTHROPIC_VERSION, Anthropic, DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_MAX_TOKENS};
pub use embeddings::{DEFAULT_EMBEDDING_BATCH, OpenAiEmbedder};
pub use openai::{DEFAULT_OPENAI_BASE_URL, OpenAiCompatible};
pub use transport::{CONNECT_TIMEOUT, RetryPolicy, StreamLimits};
