//! The [`MemoryStore`] trait and its record types: what a store keeps
//! (session key, text, role, source, metadata, timestamp, embedding) and the
//! two ways back out — recall by cosine similarity, and the recent window
//! with role filters.

use std::sync::Arc;

use super::manage::{Forget, ListOpts, SessionSummary, StoredRecord};
use crate::BoxFuture;
use crate::embed::EmbedError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One remembered message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    /// The session (memory scope) it belongs to. Sessions never see each other's records.
    pub session: String,
    /// The text.
    pub text: String,
    /// `user`, `assistant`, or another role tag.
    pub role: String,
    /// Who wrote it (the agent's name by default).
    pub source: String,
    /// Free-form metadata.
    pub metadata: Map<String, Value>,
    /// Seconds since the Unix epoch.
    pub timestamp: i64,
    /// The text's embedding (unit length for cosine ranking).
    pub embedding: Vec<f32>,
}

impl MemoryRecord {
    /// A record with empty metadata, timestamped now.
    pub fn new(
        session: impl Into<String>,
        role: impl Into<String>,
        text: impl Into<String>,
        embedding: Vec<f32>,
    ) -> Self {
        Self {
            session: session.into(),
            text: text.into(),
            role: role.into(),
            source: String::new(),
            metadata: Map::new(),
            timestamp: now_secs(),
            embedding,
        }
    }
}

/// Seconds since the Unix epoch: the clock memory records are stamped with.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Options of a recall.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallOpts {
    /// Most records returned (default 5).
    pub limit: usize,
    /// Records less similar than this are dropped (default 0.3).
    pub min_score: f32,
}

impl Default for RecallOpts {
    fn default() -> Self {
        Self {
            limit: 5,
            min_score: 0.3,
        }
    }
}

/// A recalled record and its cosine similarity to the query.
#[derive(Clone, Debug, PartialEq)]
pub struct Recalled {
    /// The record.
    pub record: MemoryRecord,
    /// Cosine similarity, higher is closer.
    pub score: f32,
}

/// Which records [`MemoryStore::recent`] returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecentOpts {
    /// Only these roles (all when empty).
    pub include_roles: Vec<String>,
    /// Never these roles.
    pub exclude_roles: Vec<String>,
    /// The newest this many (all when `None`).
    pub limit: Option<usize>,
}

impl RecentOpts {
    /// Whether a record with `role` passes the filters.
    pub fn admits(&self, role: &str) -> bool {
        (self.include_roles.is_empty() || self.include_roles.iter().any(|r| r == role))
            && !self.exclude_roles.iter().any(|r| r == role)
    }
}

/// Why a store operation failed. Its text starts with `memory store: `;
/// the error it comes from, if any, is its [`source`](std::error::Error::source).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum MemoryError {
    /// The store does not offer this operation (`forget`, text search,
    /// listing): the words say which (`memory store: this memory store …`).
    Unsupported(&'static str),
    /// Embedding the text failed.
    Embed(EmbedError),
    /// The database or file under the store failed; `backend` names it
    /// (`sqlite`, `postgres`, `writing the export`, ...).
    Backend {
        /// What failed.
        backend: String,
        /// Its error, the [`source`](std::error::Error::source).
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The store refused the request or a record, in words.
    Refused(String),
}

impl MemoryError {
    /// A failure of `backend` (`sqlite`, `postgres`, ...) keeping its error.
    pub fn backend(
        backend: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Backend {
            backend: backend.into(),
            source: Arc::new(source),
        }
    }

    /// A refusal, in words.
    pub fn refused(message: impl Into<String>) -> Self {
        Self::Refused(message.into())
    }

    /// The words after `memory store: `.
    pub fn detail(&self) -> String {
        match self {
            Self::Unsupported(what) => format!("this memory store {what}"),
            Self::Embed(error) => error.to_string(),
            Self::Backend { backend, source } => format!("{backend}: {source}"),
            Self::Refused(message) => message.clone(),
        }
    }
}

impl std::fmt::Display for MemoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "memory store: {}", self.detail())
    }
}

/// The source is the error itself (the embedder's, or the backend's, so
/// `downcast_ref` finds its type).
impl std::error::Error for MemoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Embed(error) => Some(error),
            Self::Backend { source, .. } => Some(&**source),
            Self::Unsupported(_) | Self::Refused(_) => None,
        }
    }
}

impl From<EmbedError> for MemoryError {
    fn from(error: EmbedError) -> Self {
        Self::Embed(error)
    }
}

/// Where memory records live: in memory, SQLite, PostgreSQL with pgvector.
///
/// Every implementation passes the same behaviour suite: recall ranks by
/// cosine similarity within one session, applies `limit` and `min_score`,
/// `recent` returns the newest records oldest first, filtered by role, and
/// `forget_session` deletes one session's records and no others. Stores that
/// can also list and forget single records or old ones (all three here)
/// pass `conformance::check_management` (feature `test-utils`).
///
/// Implementing a store (here a plain `Vec` behind a lock) and proving it
/// with that suite:
///
/// ```
/// use std::sync::Mutex;
/// use agentry_core::BoxFuture;
/// use agentry_core::embed::cosine;
/// use agentry_core::memory::{conformance, MemoryError, MemoryRecord, MemoryStore, RecallOpts, Recalled, RecentOpts};
///
/// #[derive(Default)]
/// struct VecStore(Mutex<Vec<MemoryRecord>>);
///
/// impl MemoryStore for VecStore {
///     fn add<'a>(&'a self, record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>> {
///         self.0.lock().unwrap().push(record);
///         Box::pin(async { Ok(()) })
///     }
///     fn recall<'a>(&'a self, session: &'a str, query: &'a [f32], opts: RecallOpts)
///         -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
///         let mut found: Vec<Recalled> = self.0.lock().unwrap().iter()
///             .filter(|r| r.session == session)
///             .map(|r| Recalled { score: cosine(query, &r.embedding), record: r.clone() })
///             .filter(|r| r.score >= opts.min_score)
///             .collect();
///         found.sort_by(|a, b| b.score.total_cmp(&a.score));
///         found.truncate(opts.limit);
///         Box::pin(async move { Ok(found) })
///     }
///     fn recent<'a>(&'a self, session: &'a str, opts: &'a RecentOpts)
///         -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>> {
///         let mut records: Vec<MemoryRecord> = self.0.lock().unwrap().iter()
///             .filter(|r| r.session == session && opts.admits(&r.role))
///             .cloned()
///             .collect();
///         records.sort_by_key(|r| r.timestamp);
///         let skip = records.len().saturating_sub(opts.limit.unwrap_or(usize::MAX));
///         Box::pin(async move { Ok(records.split_off(skip)) })
///     }
///     fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<u64, MemoryError>> {
///         let mut records = self.0.lock().unwrap();
///         let before = records.len();
///         records.retain(|r| r.session != session);
///         let forgotten = (before - records.len()) as u64;
///         Box::pin(async move { Ok(forgotten) })
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = VecStore::default();
/// conformance::check_store(&store, "doc").await; // panics on any deviation
/// assert_eq!(store.0.lock().unwrap().len(), 4); // session b was forgotten
/// # });
/// ```
pub trait MemoryStore: Send + Sync {
    /// Keep a record.
    fn add<'a>(&'a self, record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>>;

    /// The records of `session` most similar to `query`, best first.
    fn recall<'a>(
        &'a self,
        session: &'a str,
        query: &'a [f32],
        opts: RecallOpts,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>>;

    /// The newest records of `session` that pass the role filters, oldest first.
    fn recent<'a>(
        &'a self,
        session: &'a str,
        opts: &'a RecentOpts,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>>;

    /// Delete every record of `session`; the number deleted. A store that
    /// cannot delete says so (the default), and keeps everything.
    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<u64, MemoryError>> {
        let _ = session;
        Box::pin(async { Err(MemoryError::Unsupported("cannot forget")) })
    }

    /// The records of `session` whose text best matches the words of
    /// `text` ([`keywords`](super::keywords)), best first, at most `limit`:
    /// the keyword half of hybrid recall ([`Ranking`](super::Ranking)).
    /// Each `score` is the store's own text-match score (higher is better;
    /// SQLite: BM25; PostgreSQL: the summed rarity of the words matched),
    /// not a cosine. No words, no records. A store that cannot search text
    /// says so (the default), and hybrid recall then ranks by vector alone.
    fn search_text<'a>(
        &'a self,
        session: &'a str,
        text: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        let _ = (session, text, limit);
        Box::pin(async { Err(MemoryError::Unsupported("cannot search text")) })
    }

    /// Keep several records. The SQLite and PostgreSQL stores keep all or
    /// none (one transaction); the default adds them one by one and stops at
    /// the first failure.
    fn add_many<'a>(
        &'a self,
        records: &'a [MemoryRecord],
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move {
            for record in records {
                self.add(record.clone()).await?;
            }
            Ok(())
        })
    }

    /// Every session the store holds, by name. A store that cannot list
    /// says so (the default).
    fn sessions<'a>(&'a self) -> BoxFuture<'a, Result<Vec<SessionSummary>, MemoryError>> {
        Box::pin(async { Err(MemoryError::Unsupported("cannot list sessions")) })
    }

    /// A page of `session`'s records with their ids, in id (insertion)
    /// order. A store that cannot list says so (the default).
    fn list<'a>(
        &'a self,
        session: &'a str,
        opts: ListOpts,
    ) -> BoxFuture<'a, Result<Vec<StoredRecord>, MemoryError>> {
        let _ = (session, opts);
        Box::pin(async { Err(MemoryError::Unsupported("cannot list records")) })
    }

    /// Delete what `what` names; the number deleted. The default forgets
    /// whole sessions through [`forget_session`](Self::forget_session) and
    /// refuses the rest.
    fn forget<'a>(&'a self, what: &'a Forget) -> BoxFuture<'a, Result<u64, MemoryError>> {
        match what {
            Forget::Session(session) => self.forget_session(session),
            _ => {
                Box::pin(async { Err(MemoryError::Unsupported("can only forget whole sessions")) })
            }
        }
    }
}

impl<S: MemoryStore + ?Sized> MemoryStore for std::sync::Arc<S> {
    fn add<'a>(&'a self, record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>> {
        (**self).add(record)
    }
    fn recall<'a>(
        &'a self,
        session: &'a str,
        query: &'a [f32],
        opts: RecallOpts,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        (**self).recall(session, query, opts)
    }
    fn recent<'a>(
        &'a self,
        session: &'a str,
        opts: &'a RecentOpts,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>> {
        (**self).recent(session, opts)
    }
    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<u64, MemoryError>> {
        (**self).forget_session(session)
    }
    fn search_text<'a>(
        &'a self,
        session: &'a str,
        text: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        (**self).search_text(session, text, limit)
    }
    fn add_many<'a>(
        &'a self,
        records: &'a [MemoryRecord],
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        (**self).add_many(records)
    }
    fn sessions<'a>(&'a self) -> BoxFuture<'a, Result<Vec<SessionSummary>, MemoryError>> {
        (**self).sessions()
    }
    fn list<'a>(
        &'a self,
        session: &'a str,
        opts: ListOpts,
    ) -> BoxFuture<'a, Result<Vec<StoredRecord>, MemoryError>> {
        (**self).list(session, opts)
    }
    fn forget<'a>(&'a self, what: &'a Forget) -> BoxFuture<'a, Result<u64, MemoryError>> {
        (**self).forget(what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn errors_keep_their_source_and_their_words() {
        let disk = || std::io::Error::other("disk full");
        let backend = MemoryError::backend("sqlite", disk());
        assert_eq!(backend.to_string(), "memory store: sqlite: disk full");
        assert_eq!(backend.detail(), "sqlite: disk full");
        let source = backend.source().expect("the backend's error");
        assert!(source.downcast_ref::<std::io::Error>().is_some());

        let embed = MemoryError::from(EmbedError::backend(disk()));
        assert_eq!(
            embed.to_string(),
            "memory store: embedding failed: disk full"
        );
        let inner = embed.source().and_then(|e| e.downcast_ref::<EmbedError>());
        let io = inner
            .and_then(|e| e.source())
            .and_then(|e| e.downcast_ref::<std::io::Error>());
        assert!(io.is_some());

        assert_eq!(
            MemoryError::Unsupported("cannot forget one record").to_string(),
            "memory store: this memory store cannot forget one record"
        );
        assert_eq!(MemoryError::refused("too long").detail(), "too long");
        assert!(MemoryError::refused("too long").source().is_none());
    }
}
