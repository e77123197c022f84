//! # agentry-store
//!
//! Persistent [`MemoryStore`](agentry_core::memory::MemoryStore)s.
//! [`SqliteStore`] is the embedded default: one file, nothing to install.
//! [`PgStore`] keeps memory in PostgreSQL with pgvector, shared by any number
//! of processes.
//!
//! ```
//! use agentry_core::memory::{MemoryRecord, MemoryStore, RecallOpts};
//! use agentry_store::SqliteStore;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let store = SqliteStore::in_memory()?;
//! store.add(MemoryRecord::new("s1", "user", "I love pasta", vec![1.0, 0.0])).await?;
//! store.add(MemoryRecord::new("s1", "user", "It rains in Lima", vec![0.0, 1.0])).await?;
//! let hits = store.recall("s1", &[0.9, 0.1], RecallOpts::default()).await?;
//! assert_eq!(hits[0].record.text, "I love pasta");
//! assert_eq!(hits.len(), 1, "the other record is under min_score 0.3");
//! # Ok::<_, agentry_core::memory::MemoryError>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

mod postgres;
mod sqlite;
mod watched;

pub use postgres::PgStore;
pub use sqlite::{SqliteStore, decode_embedding, encode_embedding};
