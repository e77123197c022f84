//! Session memory for memory-grounded chat turns (seed 002): a
//! [`MemoryStore`] keeps records with embeddings; [`Memory`] pairs it with an
//! [`Embedder`](crate::embed::Embedder) to remember texts and recall the
//! most similar ones, and [`with_memory_block`] puts them in a system prompt.
//!
//! [`InMemoryStore`] lives here; SQLite and PostgreSQL stores live in their
//! own crate.

pub mod conformance;
mod context;
mod in_memory;
mod store;

pub use context::{DEFAULT_MEMORY_HEADING, Memory, Remember, with_memory_block};
pub use in_memory::InMemoryStore;
pub use store::{
    MemoryError, MemoryRecord, MemoryStore, RecallOpts, Recalled, RecentOpts, now_secs,
};
