//! [`HybridIndex`]: BM25 over documents' search texts, optionally fused
//! with the cosine similarity of their embeddings by reciprocal rank fusion.

use std::sync::Arc;

use agentry_core::embed::{EmbedError, Embedder, cosine};
use bm25::{Language, SearchEngine, SearchEngineBuilder};

/// The `k` of reciprocal rank fusion: each ranking adds `1 / (k + rank)`.
pub const RRF_K: f32 = 60.0;

/// How much the BM25 ranking counts in fusion, relative to the embedding
/// ranking's 1.0. Half: on MetaTool, equal weights let BM25's misses drag the
/// fused ranking below embeddings alone (see BENCHMARKS.md).
pub const DEFAULT_LEXICAL_WEIGHT: f32 = 0.5;

/// The embedder and one vector per document.
type Vectors = (Arc<dyn Embedder>, Vec<Vec<f32>>);

/// A search index over a fixed list of documents, known by their position.
pub struct HybridIndex {
    len: usize,
    engine: SearchEngine<usize>,
    embeddings: Option<Vectors>,
    lexical_weight: f32,
}

impl std::fmt::Debug for HybridIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HybridIndex")
            .field("documents", &self.len)
            .field("fused", &self.embeddings.is_some())
            .field("lexical_weight", &self.lexical_weight)
            .finish()
    }
}

/// Best first; ties in document order.
fn ranked(mut scored: Vec<(usize, f32)>) -> Vec<(usize, f32)> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}

impl HybridIndex {
    /// A BM25 index over `texts` (document `i` is `texts[i]`).
    pub fn bm25(texts: Vec<String>) -> Self {
        let len = texts.len();
        let documents: Vec<bm25::Document<usize>> = texts
            .into_iter()
            .enumerate()
            .map(|(i, text)| bm25::Document::new(i, text))
            .collect();
        let engine =
            SearchEngineBuilder::<usize>::with_documents(Language::English, documents).build();
        Self {
            len,
            engine,
            embeddings: None,
            lexical_weight: DEFAULT_LEXICAL_WEIGHT,
        }
    }

    /// Also rank by the similarity of `texts` (one per document, as embedded) to the query.
    pub async fn with_embeddings(
        mut self,
        embedder: Arc<dyn Embedder>,
        texts: &[String],
    ) -> Result<Self, EmbedError> {
        if texts.len() != self.len {
            return Err(EmbedError(format!(
                "{} texts to embed for {} documents",
                texts.len(),
                self.len
            )));
        }
        let vectors = embedder.embed(texts).await?;
        self.embeddings = Some((embedder, vectors));
        Ok(self)
    }

    /// How much BM25 counts in fusion relative to embeddings (default [`DEFAULT_LEXICAL_WEIGHT`]).
    pub fn lexical_weight(mut self, weight: f32) -> Self {
        self.lexical_weight = weight;
        self
    }

    /// How many documents there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// BM25 ranking: `(document, score)`, best first, ties in document
    /// order, only documents sharing a term with the query.
    pub fn rank_bm25(&self, query: &str) -> Vec<(usize, f32)> {
        ranked(
            self.engine
                .search(query, None)
                .into_iter()
                .map(|hit| (hit.document.id, hit.score))
                .collect(),
        )
    }

    /// Embedding ranking of every document by cosine similarity to the query
    /// (empty without embeddings).
    pub async fn rank_embeddings(&self, query: &str) -> Result<Vec<(usize, f32)>, EmbedError> {
        let Some((embedder, vectors)) = &self.embeddings else {
            return Ok(Vec::new());
        };
        let query = embedder.embed(&[query.to_owned()]).await?;
        let query = query
            .first()
            .ok_or_else(|| EmbedError("no vector".into()))?;
        Ok(ranked(
            vectors
                .iter()
                .enumerate()
                .map(|(i, vector)| (i, cosine(query, vector)))
                .collect(),
        ))
    }

    /// The best matches: BM25 alone, or BM25 and embeddings fused by
    /// reciprocal rank fusion when embeddings are set (falling back to BM25
    /// if the query cannot be embedded).
    pub async fn rank(&self, query: &str) -> Vec<(usize, f32)> {
        let lexical = self.rank_bm25(query);
        if self.embeddings.is_none() {
            return lexical;
        }
        let semantic = match self.rank_embeddings(query).await {
            Ok(semantic) => semantic,
            Err(error) => {
                tracing::warn!(%error, "query embedding failed; ranking by BM25 alone");
                return lexical;
            }
        };
        let mut fused = vec![0.0f32; self.len];
        for (ranking, weight) in [(&lexical, self.lexical_weight), (&semantic, 1.0)] {
            for (rank, (index, _)) in ranking.iter().enumerate() {
                fused[*index] += weight / (RRF_K + rank as f32 + 1.0);
            }
        }
        ranked(
            fused
                .into_iter()
                .enumerate()
                .filter(|(_, score)| *score > 0.0)
                .collect(),
        )
    }
}
