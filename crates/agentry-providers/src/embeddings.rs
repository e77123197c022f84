//! [`OpenAiEmbedder`]: the OpenAI-compatible `/embeddings` endpoint (OpenAI,
//! Ollama, vLLM, llama.cpp server, LM Studio) as an [`Embedder`], with the
//! same retries as the chat provider.

use agentry_core::BoxFuture;
use agentry_core::embed::{EmbedError, Embedder};
use serde::Deserialize;
use serde_json::json;

use crate::openai::openai_env;
use crate::secret::Secret;
use crate::transport::{RetryPolicy, send};

/// Texts sent in one request (OpenAI accepts up to 2,048 inputs).
pub const DEFAULT_EMBEDDING_BATCH: usize = 256;

/// An embeddings model behind an OpenAI-compatible API.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<Secret>,
    model: String,
    dimensions: usize,
    batch: usize,
    retry: RetryPolicy,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// `model` at `base_url`, returning vectors of `dimensions` values.
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        model: impl Into<String>,
        dimensions: usize,
    ) -> Self {
        Self {
            client: crate::transport::default_client(),
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: api_key.map(Secret::new),
            model: model.into(),
            dimensions,
            batch: DEFAULT_EMBEDDING_BATCH,
            retry: RetryPolicy::default(),
        }
    }

    /// Configure from `OPENAI_API_KEY` and `OPENAI_BASE_URL` (a key is
    /// required unless a base URL is set).
    pub fn from_env(model: impl Into<String>, dimensions: usize) -> Result<Self, EmbedError> {
        let (base, key) = openai_env().map_err(EmbedError::Failed)?;
        Ok(Self::new(base, key, model, dimensions))
    }

    /// Send at most `batch` texts per request.
    pub fn with_batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// Use another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        let url = format!("{}/embeddings", self.base_url);
        let response = send(&self.retry, || {
            let request = self.client.post(&url).json(&body);
            match &self.api_key {
                Some(key) => request.bearer_auth(key.expose()),
                None => request,
            }
        })
        .await
        .map_err(EmbedError::backend)?;
        let parsed: Response = response
            .json()
            .await
            .map_err(|e| EmbedError::failed(format!("malformed embeddings response: {e}")))?;
        if parsed.data.len() != texts.len() {
            return Err(EmbedError::failed(format!(
                "asked for {} embeddings, got {}",
                texts.len(),
                parsed.data.len()
            )));
        }
        let mut vectors = vec![Vec::new(); texts.len()];
        for datum in parsed.data {
            if datum.embedding.len() != self.dimensions {
                return Err(EmbedError::failed(format!(
                    "expected {} dimensions, got {}",
                    self.dimensions,
                    datum.embedding.len()
                )));
            }
            let slot = vectors.get_mut(datum.index).ok_or_else(|| {
                EmbedError::failed(format!("embedding index {} out of range", datum.index))
            })?;
            *slot = datum.embedding;
        }
        if vectors.iter().any(Vec::is_empty) {
            return Err(EmbedError::failed("an input got no embedding"));
        }
        Ok(vectors)
    }
}

impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        let work = async move {
            let mut vectors = Vec::with_capacity(texts.len());
            for chunk in texts.chunks(self.batch) {
                vectors.extend(self.embed_batch(chunk).await?);
            }
            Ok(vectors)
        };
        Box::pin(agentry_core::embed::traced(
            self,
            "openai",
            texts.len(),
            work,
        ))
    }
}
