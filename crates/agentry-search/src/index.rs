//! [`HybridIndex`]: BM25 over documents' search texts, optionally fused
//! with the cosine similarity of their embeddings by reciprocal rank fusion.

use std::collections::HashMap;
use std::sync::Arc;

use agentry_core::embed::{EmbedError, Embedder};
use bm25::{Language, SearchEngine, SearchEngineBuilder};

/// The `k` of reciprocal rank fusion: each ranking adds `1 / (k + rank)`.
pub const RRF_K: f32 = 60.0;

/// How much the BM25 ranking counts in fusion, relative to the embedding
/// ranking's 1.0. Half: on MetaTool, equal weights let BM25's misses drag the
/// fused ranking below embeddings alone (see BENCHMARKS.md).
pub const DEFAULT_LEXICAL_WEIGHT: f32 = 0.5;

/// How deep fusion reads each ranking.
pub const FUSION_DEPTH: usize = 100;

/// The embedder and the documents' unit vectors, one row per document.
struct Vectors {
    embedder: Arc<dyn Embedder>,
    dimensions: usize,
    /// Row `i` (`dimensions` long) is document `i`'s vector scaled to length 1.
    rows: Vec<f32>,
}

impl Vectors {
    fn new(embedder: Arc<dyn Embedder>, vectors: Vec<Vec<f32>>) -> Result<Self, EmbedError> {
        let dimensions = vectors.first().map_or(0, Vec::len);
        let mut rows = Vec::with_capacity(dimensions * vectors.len());
        for (i, vector) in vectors.iter().enumerate() {
            if vector.len() != dimensions {
                return Err(EmbedError(format!(
                    "vector {i} has {} dimensions, the first has {dimensions}",
                    vector.len()
                )));
            }
            rows.extend(unit(vector));
        }
        Ok(Self {
            embedder,
            dimensions,
            rows,
        })
    }
}

/// `vector` scaled to length 1 (zero stays zero).
fn unit(vector: &[f32]) -> impl Iterator<Item = f32> + '_ {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
    vector.iter().map(move |x| x * scale)
}

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

/// The `depth` best, best first; ties in document order.
fn ranked(mut scored: Vec<(usize, f32)>, depth: usize) -> Vec<(usize, f32)> {
    let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if depth == 0 {
        return Vec::new();
    }
    if depth < scored.len() {
        scored.select_nth_unstable_by(depth - 1, order);
        scored.truncate(depth);
    }
    scored.sort_by(order);
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
        self,
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
        self.with_vectors(embedder, vectors)
    }

    /// Also rank by embedding similarity, with the documents' vectors
    /// already computed by `embedder` (one per document, in order; kept from
    /// an earlier [`with_embeddings`](Self::with_embeddings), say).
    pub fn with_vectors(
        mut self,
        embedder: Arc<dyn Embedder>,
        vectors: Vec<Vec<f32>>,
    ) -> Result<Self, EmbedError> {
        if vectors.len() != self.len {
            return Err(EmbedError(format!(
                "{} vectors for {} documents",
                vectors.len(),
                self.len
            )));
        }
        self.embeddings = Some(Vectors::new(embedder, vectors)?);
        Ok(self)
    }

    /// The documents' vectors (scaled to length 1), when there are embeddings.
    pub fn vectors(&self) -> Option<impl Iterator<Item = &[f32]>> {
        let vectors = self.embeddings.as_ref()?;
        Some(vectors.rows.chunks(vectors.dimensions.max(1)))
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
        self.top_bm25(query, self.len)
    }

    /// The `depth` best of [`rank_bm25`](Self::rank_bm25).
    pub fn top_bm25(&self, query: &str, depth: usize) -> Vec<(usize, f32)> {
        ranked(
            self.engine
                .search(query, None)
                .into_iter()
                .map(|hit| (hit.document.id, hit.score))
                .collect(),
            depth,
        )
    }

    /// Embedding ranking of every document by cosine similarity to the query
    /// (empty without embeddings).
    pub async fn rank_embeddings(&self, query: &str) -> Result<Vec<(usize, f32)>, EmbedError> {
        self.top_embeddings(query, self.len).await
    }

    /// The `depth` best of [`rank_embeddings`](Self::rank_embeddings).
    pub async fn top_embeddings(
        &self,
        query: &str,
        depth: usize,
    ) -> Result<Vec<(usize, f32)>, EmbedError> {
        let Some(vectors) = &self.embeddings else {
            return Ok(Vec::new());
        };
        let query = vectors.embedder.embed(&[query.to_owned()]).await?;
        let query = query
            .first()
            .ok_or_else(|| EmbedError("no vector".into()))?;
        Ok(self.nearest(query, depth))
    }

    /// The `depth` documents whose vectors are nearest `query` (cosine), best first.
    pub fn nearest(&self, query: &[f32], depth: usize) -> Vec<(usize, f32)> {
        let Some(vectors) = &self.embeddings else {
            return Vec::new();
        };
        if query.len() != vectors.dimensions || vectors.dimensions == 0 {
            return Vec::new();
        }
        let query: Vec<f32> = unit(query).collect();
        ranked(
            vectors
                .rows
                .chunks_exact(vectors.dimensions)
                .map(|row| row.iter().zip(&query).map(|(x, y)| x * y).sum::<f32>())
                .enumerate()
                .collect(),
            depth,
        )
    }

    /// The best matches: BM25 alone, or BM25 and embeddings fused by
    /// reciprocal rank fusion when embeddings are set (falling back to BM25
    /// if the query cannot be embedded).
    pub async fn rank(&self, query: &str) -> Vec<(usize, f32)> {
        self.top(query, self.len).await
    }

    /// The `limit` best of [`rank`](Self::rank). Fusion reads each ranking to
    /// [`FUSION_DEPTH`] (or `limit`, if deeper): past it a document adds too
    /// little to move.
    pub async fn top(&self, query: &str, limit: usize) -> Vec<(usize, f32)> {
        let depth = limit.max(FUSION_DEPTH).min(self.len);
        let lexical = self.top_bm25(query, depth);
        if self.embeddings.is_none() {
            return ranked(lexical, limit);
        }
        let semantic = match self.top_embeddings(query, depth).await {
            Ok(semantic) => semantic,
            Err(error) => {
                tracing::warn!(%error, "query embedding failed; ranking by BM25 alone");
                return ranked(lexical, limit);
            }
        };
        ranked(self.fuse(&lexical, &semantic), limit)
    }

    /// Reciprocal rank fusion of a BM25 and an embedding ranking.
    pub fn fuse(&self, lexical: &[(usize, f32)], semantic: &[(usize, f32)]) -> Vec<(usize, f32)> {
        let mut fused: HashMap<usize, f32> = HashMap::new();
        for (ranking, weight) in [(lexical, self.lexical_weight), (semantic, 1.0)] {
            for (rank, (index, _)) in ranking.iter().enumerate() {
                *fused.entry(*index).or_default() += weight / (RRF_K + rank as f32 + 1.0);
            }
        }
        let fused: Vec<(usize, f32)> = fused.into_iter().filter(|(_, s)| *s > 0.0).collect();
        let len = fused.len();
        ranked(fused, len)
    }
}
