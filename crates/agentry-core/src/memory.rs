//! Session memory for memory-grounded chat turns: a
//! [`MemoryStore`] keeps records with embeddings; [`Memory`] pairs it with an
//! [`Embedder`](crate::embed::Embedder) to remember texts and recall the
//! most similar ones, and [`with_memory_block`] puts them in a system prompt.
//!
//! People stay in control of what is kept: [`MemoryStore::sessions`],
//! [`MemoryStore::list`] and [`MemoryStore::forget`] (one record, a session,
//! or everything older than a date), and [`export_session`] /
//! [`import_records`] as JSON lines.
//!
//! Recall ranks by cosine similarity; a [`Ranking`] given to
//! [`Memory::with_ranking`] adds keyword search fused with it (hybrid
//! recall) and recency and importance terms.
//!
//! [`InMemoryStore`] lives here; SQLite and PostgreSQL stores live in their
//! own crate.

#[cfg(any(test, feature = "test-utils"))]
pub mod conformance;
mod context;
mod in_memory;
mod manage;
mod ranking;
mod store;
mod transfer;

pub use context::{DEFAULT_MEMORY_HEADING, Memory, Remember, with_memory_block};
pub use in_memory::InMemoryStore;
pub use manage::{Forget, ListOpts, SessionSummary, StoredRecord};
pub use ranking::{FUSION_K, KEYWORD_POSTINGS, MAX_KEYWORDS, Ranking, keywords, rarest_within};
pub use store::{
    MemoryError, MemoryRecord, MemoryStore, RecallOpts, Recalled, RecentOpts, now_secs,
};
pub use transfer::{export_session, import_records};
