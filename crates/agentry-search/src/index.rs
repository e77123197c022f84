//! [`HybridIndex`]: BM25 over documents' search texts, optionally fused
//! with the cosine similarity of their embeddings by reciprocal rank fusion.
//! A document may have several embedded passages (a tool's description and
//! its usage examples, say); see [`HybridIndex::nearest`] for how they are
//! pooled.

use std::collections::HashMap;
use std::sync::Arc;

use agentry_core::embed::{EmbedError, Embedder, dot};

use crate::lexical::Bm25;

/// The `k` of reciprocal rank fusion: each ranking adds `1 / (k + rank)`.
pub const RRF_K: f32 = 60.0;

/// How much the BM25 ranking counts in fusion, relative to the embedding
/// ranking's 1.0. Half: on MetaTool, equal weights let BM25's misses drag the
/// fused ranking below embeddings alone (see BENCHMARKS.md).
pub const DEFAULT_LEXICAL_WEIGHT: f32 = 0.5;

/// How deep fusion reads each ranking.
pub const FUSION_DEPTH: usize = 100;

/// The embedder and the passages' unit vectors, one row per passage.
struct Vectors {
    embedder: Arc<dyn Embedder>,
    dimensions: usize,
    /// Row `i` (`dimensions` long) is passage `i`'s vector scaled to length 1.
    rows: Vec<f32>,
    /// The document passage `i` belongs to.
    owners: Vec<u32>,
    /// For each document with more than one passage: the unit centroid of its passages.
    centroids: Vec<(u32, Vec<f32>)>,
}

impl Vectors {
    fn new(
        embedder: Arc<dyn Embedder>,
        passages: Vec<(usize, Vec<f32>)>,
        documents: usize,
    ) -> Result<Self, EmbedError> {
        let dimensions = passages.first().map_or(0, |(_, vector)| vector.len());
        let mut rows = Vec::with_capacity(dimensions * passages.len());
        let mut owners = Vec::with_capacity(passages.len());
        for (i, (owner, vector)) in passages.iter().enumerate() {
            if vector.len() != dimensions {
                return Err(EmbedError::failed(format!(
                    "vector {i} has {} dimensions, the first has {dimensions}",
                    vector.len()
                )));
            }
            if *owner >= documents {
                return Err(EmbedError::failed(format!(
                    "passage {i} belongs to document {owner}, but there are {documents}"
                )));
            }
            rows.extend(unit(vector));
            owners.push(*owner as u32);
        }
        let mut sums: HashMap<u32, (usize, Vec<f32>)> = HashMap::new();
        for (row, owner) in rows.chunks_exact(dimensions.max(1)).zip(&owners) {
            let (count, sum) = sums
                .entry(*owner)
                .or_insert_with(|| (0, vec![0.0; dimensions]));
            *count += 1;
            sum.iter_mut().zip(row).for_each(|(s, x)| *s += x);
        }
        let mut centroids: Vec<(u32, Vec<f32>)> = sums
            .into_iter()
            .filter(|(_, (count, _))| *count > 1)
            .map(|(owner, (_, sum))| (owner, unit(&sum).collect()))
            .collect();
        centroids.sort_by_key(|(owner, _)| *owner);
        Ok(Self {
            embedder,
            dimensions,
            rows,
            owners,
            centroids,
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
    lexical: Bm25,
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
        Self {
            len: texts.len(),
            lexical: Bm25::new(&texts),
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
            return Err(EmbedError::failed(format!(
                "{} texts to embed for {} documents",
                texts.len(),
                self.len
            )));
        }
        let vectors = embedder.embed(texts).await?;
        self.with_vectors(embedder, vectors)
    }

    /// Also rank by embedding similarity, a document by its passages (pooled
    /// as [`nearest`](Self::nearest) says): `passages` are `(document, text)`,
    /// any number per document (none leaves a document out of the embedding
    /// ranking).
    pub async fn with_passages(
        self,
        embedder: Arc<dyn Embedder>,
        passages: &[(usize, String)],
    ) -> Result<Self, EmbedError> {
        let texts: Vec<String> = passages.iter().map(|(_, text)| text.clone()).collect();
        let vectors = embedder.embed(&texts).await?;
        if vectors.len() != passages.len() {
            return Err(EmbedError::failed(format!(
                "{} vectors for {} passages",
                vectors.len(),
                passages.len()
            )));
        }
        let owners = passages.iter().map(|(owner, _)| *owner);
        self.with_passage_vectors(embedder, owners.zip(vectors).collect())
    }

    /// Also rank by embedding similarity, with the documents' vectors
    /// already computed by `embedder` (one per document, in order; kept from
    /// an earlier [`with_embeddings`](Self::with_embeddings), say).
    pub fn with_vectors(
        self,
        embedder: Arc<dyn Embedder>,
        vectors: Vec<Vec<f32>>,
    ) -> Result<Self, EmbedError> {
        if vectors.len() != self.len {
            return Err(EmbedError::failed(format!(
                "{} vectors for {} documents",
                vectors.len(),
                self.len
            )));
        }
        self.with_passage_vectors(embedder, vectors.into_iter().enumerate().collect())
    }

    /// Also rank by embedding similarity, with passages' vectors already
    /// computed by `embedder`: `(document, vector)`, any number per document.
    pub fn with_passage_vectors(
        mut self,
        embedder: Arc<dyn Embedder>,
        passages: Vec<(usize, Vec<f32>)>,
    ) -> Result<Self, EmbedError> {
        self.embeddings = Some(Vectors::new(embedder, passages, self.len)?);
        Ok(self)
    }

    /// The passages' vectors (scaled to length 1) with the document each
    /// belongs to, when there are embeddings.
    pub fn vectors(&self) -> Option<impl Iterator<Item = (usize, &[f32])>> {
        let vectors = self.embeddings.as_ref()?;
        let owners = vectors.owners.iter().map(|owner| *owner as usize);
        Some(owners.zip(vectors.rows.chunks(vectors.dimensions.max(1))))
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
        ranked(self.lexical.scores(query), depth)
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
        let query = vectors.embedder.embed_queries(&[query.to_owned()]).await?;
        let query = query
            .first()
            .ok_or_else(|| EmbedError::failed("no vector"))?;
        Ok(self.nearest(query, depth))
    }

    /// The `depth` documents whose passages are nearest `query`, best first.
    /// A document with one passage scores its cosine similarity; one with
    /// several scores the mean of its best passage's similarity and its
    /// passages' centroid's. The best passage finds a request worded like
    /// one example; the centroid favours the tool that many examples agree
    /// on (on MetaTool with usage examples, two points of recall@5 over the
    /// best passage alone; see BENCHMARKS.md).
    pub fn nearest(&self, query: &[f32], depth: usize) -> Vec<(usize, f32)> {
        let Some(vectors) = &self.embeddings else {
            return Vec::new();
        };
        if query.len() != vectors.dimensions || vectors.dimensions == 0 {
            return Vec::new();
        }
        let query: Vec<f32> = unit(query).collect();
        let mut best = vec![f32::NEG_INFINITY; self.len];
        for (row, owner) in vectors
            .rows
            .chunks_exact(vectors.dimensions)
            .zip(&vectors.owners)
        {
            let best = &mut best[*owner as usize];
            *best = best.max(dot(row, &query));
        }
        for (owner, centroid) in &vectors.centroids {
            let best = &mut best[*owner as usize];
            *best = 0.5 * *best + 0.5 * dot(centroid, &query);
        }
        let scored = best
            .into_iter()
            .enumerate()
            .filter(|(_, similarity)| similarity.is_finite())
            .collect();
        ranked(scored, depth)
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
