//! [`Memory`]: a store plus an embedder, and the text it gives a prompt —
//! `build_context_safe` (recall that never fails a turn), `recent_text`
//! and [`with_memory_block`].

use std::sync::Arc;

use serde_json::{Map, Value};

use super::ranking::Ranking;
use super::store::{
    MemoryError, MemoryRecord, MemoryStore, RecallOpts, Recalled, RecentOpts, now_secs,
};
use crate::embed::Embedder;

/// The heading of the memory block in a system prompt (the default).
pub const DEFAULT_MEMORY_HEADING: &str = "## Memory";

/// A memory store with the embedder that turns texts into its vectors.
#[derive(Clone)]
pub struct Memory {
    store: Arc<dyn MemoryStore>,
    embedder: Arc<dyn Embedder>,
    ranking: Ranking,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("embedder", &self.embedder.model_id())
            .field("ranking", &self.ranking)
            .finish_non_exhaustive()
    }
}

/// What to store with a remembered text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Remember {
    /// The role tag (`user`, `assistant`).
    pub role: String,
    /// Who wrote it.
    pub source: String,
    /// Free-form metadata.
    pub metadata: Map<String, Value>,
}

impl Memory {
    /// Memory over `store`, embedding with `embedder`, recalling by cosine
    /// similarity alone.
    pub fn new(store: impl MemoryStore + 'static, embedder: impl Embedder + 'static) -> Self {
        Self {
            store: Arc::new(store),
            embedder: Arc::new(embedder),
            ranking: Ranking::default(),
        }
    }

    /// The same memory, recalling with `ranking`: keyword search fused in,
    /// recency and importance terms (see [`Ranking`]).
    pub fn with_ranking(mut self, ranking: Ranking) -> Self {
        self.ranking = ranking;
        self
    }

    /// How recall ranks records.
    pub fn ranking(&self) -> Ranking {
        self.ranking
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    async fn embed_one(&self, text: &str) -> Result<Vec<f32>, MemoryError> {
        let mut vectors = self.embedder.embed(&[text.to_owned()]).await?;
        vectors
            .pop()
            .ok_or_else(|| MemoryError::refused("the embedder returned no vector"))
    }

    /// A recall's query, embedded as a query
    /// ([`Embedder::embed_queries`]).
    async fn embed_query(&self, text: &str) -> Result<Vec<f32>, MemoryError> {
        let mut vectors = self.embedder.embed_queries(&[text.to_owned()]).await?;
        vectors
            .pop()
            .ok_or_else(|| MemoryError::refused("the embedder returned no vector"))
    }

    /// Embed `text` and keep it in `session`, timestamped now.
    pub async fn remember(
        &self,
        session: &str,
        text: &str,
        what: Remember,
    ) -> Result<(), MemoryError> {
        let embedding = self.embed_one(text).await?;
        self.store
            .add(MemoryRecord {
                session: session.to_owned(),
                text: text.to_owned(),
                role: what.role,
                source: what.source,
                metadata: what.metadata,
                timestamp: now_secs(),
                embedding,
            })
            .await
    }

    /// The records of `session` most similar to `query`, best first, ranked
    /// as [`ranking`](Self::ranking) says. With keywords on, a store that
    /// cannot search text is logged and recall ranks by vector alone.
    pub async fn recall(
        &self,
        session: &str,
        query: &str,
        opts: RecallOpts,
    ) -> Result<Vec<Recalled>, MemoryError> {
        use tracing::Instrument;
        // The GenAI conventions' retrieval span: the memory is the source.
        let span = tracing::info_span!(
            "retrieval",
            otel.name = "retrieval memory",
            gen_ai.operation.name = "retrieval",
            gen_ai.data_source.id = "memory",
            gen_ai.request.model = self.embedder.model_id(),
            gen_ai.request.top_k = i64::try_from(opts.limit).unwrap_or(i64::MAX),
            gen_ai.conversation.id = session,
            agentry.memory.recalled = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let recalled = async {
            let vector = self.embed_query(query).await?;
            self.recall_with_vector(session, query, &vector, opts).await
        }
        .instrument(span.clone())
        .await;
        match &recalled {
            Ok(records) => span.record(
                "agentry.memory.recalled",
                i64::try_from(records.len()).unwrap_or(i64::MAX),
            ),
            Err(error) => span
                .record("error.type", error_type(error))
                .record("otel.status_code", "error"),
        };
        recalled
    }

    /// [`recall`](Self::recall) with the query's embedding already made
    /// (`vector` must be `query`'s embedding by this memory's embedder).
    pub async fn recall_with_vector(
        &self,
        session: &str,
        query: &str,
        vector: &[f32],
        opts: RecallOpts,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let ranking = self.ranking;
        if ranking.is_plain() {
            return self.store.recall(session, vector, opts).await;
        }
        let wide = RecallOpts {
            limit: ranking.candidates(opts.limit),
            ..opts
        };
        let by_vector = self.store.recall(session, vector, wide).await?;
        let by_keywords = if ranking.keywords {
            match self.store.search_text(session, query, wide.limit).await {
                Ok(hits) => hits,
                Err(error) => {
                    tracing::warn!(%error, session, "keyword search failed; recalling by vector alone");
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        Ok(ranking.rank(by_vector, by_keywords, opts, now_secs()))
    }

    /// The recalled records as prompt text, one `- role: text` line each,
    /// best first; `""` when nothing is recalled or anything fails (the
    /// failure is logged, never raised: memory must not fail a turn).
    pub async fn build_context_safe(&self, session: &str, query: &str, opts: RecallOpts) -> String {
        match self.recall(session, query, opts).await {
            Ok(hits) => hits
                .iter()
                .map(|hit| format!("- {}: {}", hit.record.role, hit.record.text))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(error) => {
                tracing::warn!(%error, session, "memory recall failed; answering without memory");
                String::new()
            }
        }
    }

    /// The newest records of `session` as `role: text` lines, oldest first.
    pub async fn recent_text(
        &self,
        session: &str,
        opts: &RecentOpts,
    ) -> Result<String, MemoryError> {
        Ok(self
            .store
            .recent(session, opts)
            .await?
            .iter()
            .map(|record| format!("{}: {}", record.role, record.text))
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

/// `system_base` with a memory block appended: a blank line, `heading`, then
/// `context`. Unchanged when `context` is empty.
pub fn with_memory_block(system_base: &str, heading: &str, context: &str) -> String {
    if context.trim().is_empty() {
        return system_base.to_owned();
    }
    if system_base.is_empty() {
        return format!("{heading}\n{context}");
    }
    format!("{system_base}\n\n{heading}\n{context}")
}

/// A recall failure's `error.type` on its span: low cardinality, by kind.
fn error_type(error: &MemoryError) -> &'static str {
    match error {
        MemoryError::Unsupported(_) => "unsupported",
        MemoryError::Embed(_) => "embed",
        MemoryError::Backend { .. } => "backend",
        MemoryError::Refused(_) => "refused",
    }
}
