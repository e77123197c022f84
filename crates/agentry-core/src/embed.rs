//! The `Embedder` trait: text in, vectors out. Memory recall and skill search
//! rank by the cosine similarity of these vectors.

use crate::BoxFuture;
use tracing::Instrument;

/// Why embedding failed. Its text starts with `embedding failed: `; the
/// error it comes from, if any, is its [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum EmbedError {
    /// The model or the service failed.
    Backend {
        /// Its error, the [`source`](std::error::Error::source).
        source: std::sync::Arc<dyn std::error::Error + Send + Sync>,
    },
    /// Embedding failed for the reason given (a wrong count or length of
    /// vectors, no vector, a malformed answer).
    Failed(String),
}

impl EmbedError {
    /// A failure of the model or service, keeping its error.
    pub fn backend(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Backend {
            source: std::sync::Arc::new(source),
        }
    }

    /// A failure, in words.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
}

impl std::fmt::Display for EmbedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Backend { source } => write!(f, "embedding failed: {source}"),
            Self::Failed(message) => write!(f, "embedding failed: {message}"),
        }
    }
}

/// The source is the backend's error itself, so `downcast_ref` finds its type.
impl std::error::Error for EmbedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Backend { source } => Some(&**source),
            Self::Failed(_) => None,
        }
    }
}

/// Turns texts into fixed-size vectors.
pub trait Embedder: Send + Sync {
    /// The model's id, for traces and stored records.
    fn model_id(&self) -> &str;

    /// Length of every vector.
    fn dimensions(&self) -> usize;

    /// One vector per text, in order: texts to be found (tool descriptions,
    /// skills, memories).
    fn embed<'a>(&'a self, texts: &'a [String])
    -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>>;

    /// One vector per query (a request, a search), in order, to be compared
    /// with vectors from [`embed`](Self::embed). Models trained with a prefix
    /// for each side (nomic-embed-text's `search_query: ` and
    /// `search_document: `) tell them apart here; by default a query is
    /// embedded like any text.
    fn embed_queries<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        self.embed(texts)
    }
}

/// A shared embedder is an embedder.
impl<E: Embedder + ?Sized> Embedder for std::sync::Arc<E> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }

    fn dimensions(&self) -> usize {
        (**self).dimensions()
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        (**self).embed(texts)
    }

    fn embed_queries<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        (**self).embed_queries(texts)
    }
}

/// A deterministic embedder for tests and examples, next to
/// [`ScriptedModel`](crate::model::ScriptedModel): one dimension per keyword
/// (how often it occurs in the text, ignoring case) plus a constant `bias`
/// dimension, so texts without a keyword are not all zeros. It makes recall
/// predictable in logic tests; it is never evidence that retrieval works
/// (that is the real embedders' tests' job).
///
/// ```
/// use agentry_core::embed::{Embedder, KeywordEmbedder, cosine};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let embedder = KeywordEmbedder::new(["pasta", "weather"]);
/// let v = embedder.embed(&["Pasta, pasta!".into(), "Weather in Lima".into()]).await.unwrap();
/// assert_eq!(v, [vec![2.0, 0.0, 0.1], vec![0.0, 1.0, 0.1]]);
/// assert!(cosine(&v[0], &v[1]) < 0.1);
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct KeywordEmbedder {
    keywords: Vec<String>,
    bias: f32,
}

impl KeywordEmbedder {
    /// An embedder over these keywords, with a bias of 0.1.
    pub fn new<I, S>(keywords: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            keywords: keywords
                .into_iter()
                .map(|keyword| keyword.into().to_lowercase())
                .collect(),
            bias: 0.1,
        }
    }

    /// The value of the constant last dimension.
    pub fn with_bias(mut self, bias: f32) -> Self {
        self.bias = bias;
        self
    }
}

impl Embedder for KeywordEmbedder {
    fn model_id(&self) -> &str {
        "keywords"
    }

    fn dimensions(&self) -> usize {
        self.keywords.len() + 1
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        let vectors = texts
            .iter()
            .map(|text| {
                let text = text.to_lowercase();
                self.keywords
                    .iter()
                    .map(|keyword| text.matches(keyword.as_str()).count() as f32)
                    .chain([self.bias])
                    .collect()
            })
            .collect();
        Box::pin(async move { Ok(vectors) })
    }
}

/// The dot product of two vectors of the same length (of different lengths,
/// the result means nothing). It sums in eight independent lanes,
/// which the compiler turns into SIMD: a plain `zip().sum()` must add in
/// order and stays scalar, bound by each addition's latency (about four
/// times slower when scanning thousands of vectors).
///
/// ```
/// assert_eq!(agentry_core::embed::dot(&[1.0; 10], &[2.0; 10]), 20.0);
/// ```
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Cosine similarity of two vectors (0 when either is all zeros or lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut norm_a, mut norm_b) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    if norm_a == 0.0 || norm_b == 0.0 {
        0.0
    } else {
        dot / (norm_a.sqrt() * norm_b.sqrt())
    }
}

/// Run `embedding` (a call of `embedder` on `inputs` texts) inside the
/// OpenTelemetry GenAI conventions' `embeddings {model}` span, marked as
/// failed when it fails: what an [`Embedder`] implementation wraps its
/// work in, so that every embedder is traced alike.
///
/// ```
/// use agentry_core::embed::{Embedder, KeywordEmbedder, traced};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let embedder = KeywordEmbedder::new(["weather", "paris"]);
/// let texts = vec!["weather in Paris".to_owned()];
/// let vectors = traced(&embedder, "agentry.keywords", texts.len(), embedder.embed(&texts)).await?;
/// assert_eq!(vectors[0].len(), embedder.dimensions());
/// # Ok::<_, agentry_core::embed::EmbedError>(())
/// # }).unwrap();
/// ```
pub async fn traced<T>(
    embedder: &(impl Embedder + ?Sized),
    provider: &str,
    inputs: usize,
    embedding: impl std::future::Future<Output = Result<T, EmbedError>>,
) -> Result<T, EmbedError> {
    let model = embedder.model_id();
    let span = tracing::info_span!(
        "embeddings",
        otel.name = format!("embeddings {model}"),
        // In this process (candle, llama.cpp) or over the network.
        otel.kind = match provider {
            "candle" | "llama.cpp" | "agentry.keywords" => "internal",
            _ => "client",
        },
        gen_ai.operation.name = "embeddings",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.embeddings.dimension.count = i64::try_from(embedder.dimensions()).unwrap_or(i64::MAX),
        agentry.embeddings.inputs = i64::try_from(inputs).unwrap_or(i64::MAX),
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    let result = embedding.instrument(span.clone()).await;
    if let Err(error) = &result {
        let kind = match error {
            EmbedError::Backend { .. } => "backend",
            EmbedError::Failed(_) => "failed",
        };
        span.record("error.type", kind)
            .record("otel.status_code", "error");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert!((cosine(&[1.0, 1.0], &[-1.0, -1.0]) + 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }
}
