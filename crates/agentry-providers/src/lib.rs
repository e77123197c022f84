//! # agentry-providers
//!
//! Model providers for agentry, each a [`ChatModel`](agentry_core::model::ChatModel),
//! each behind its own feature (both on by default):
//!
//! - [`OpenAiCompatible`] (feature `openai`): OpenAI Chat Completions and the
//!   servers that speak it (Ollama, vLLM, the llama.cpp server). Reads
//!   `OPENAI_API_KEY` and `OPENAI_BASE_URL`. [`OpenAiEmbedder`] is the same
//!   API's `/embeddings` endpoint.
//! - [`Anthropic`] (feature `anthropic`): the Anthropic Messages API. Reads
//!   `ANTHROPIC_API_KEY`.
//!
//! Both stream over SSE, support parallel tool calls, report usage, map tool
//! names to provider-safe wire names and back, and retry 429, 5xx and
//! connection failures with backoff, honouring `retry-after`
//! ([`RetryPolicy`], [`StreamLimits`]).
//!
//! ```
//! # #[cfg(feature = "openai")] {
//! use agentry_core::model::ChatRequest;
//! use agentry_providers::OpenAiCompatible;
//!
//! let model = OpenAiCompatible::new("http://localhost:11434/v1", None, "qwen2.5:0.5b");
//! let body = model.request_body(&ChatRequest::new(Some("Be brief.".into()), "Hi")).unwrap();
//! assert_eq!(body["model"], "qwen2.5:0.5b");
//! assert_eq!(body["stream"], true);
//! assert_eq!(body["messages"][0]["role"], "system");
//! assert_eq!(body["messages"][1]["content"], "Hi");
//! # }
//! ```
//!
//! The HTTP client tools use is not here: it is `agentry-net`.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

#[cfg(feature = "anthropic")]
mod anthropic;
#[cfg(feature = "openai")]
mod embeddings;
#[cfg(feature = "openai")]
mod openai;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod secret;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod structured;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod transport;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod wire_names;

#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub use anthropic::{ANTHROPIC_VERSION, Anthropic, DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_MAX_TOKENS};
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub use embeddings::{DEFAULT_EMBEDDING_BATCH, OpenAiEmbedder};
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub use openai::{DEFAULT_OPENAI_BASE_URL, OpenAiCompatible};
#[cfg(any(feature = "openai", feature = "anthropic"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "openai", feature = "anthropic"))))]
pub use transport::{CONNECT_TIMEOUT, RetryPolicy, StreamLimits};

/// Entry points for the fuzz targets (`fuzz/`): a provider's stream reader
/// on raw bytes, without a network. Not a stable API.
#[doc(hidden)]
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub mod __fuzz {
    use agentry_core::model::{ModelError, Step, collect_step};
    use eventsource_stream::Eventsource;
    use futures_util::{FutureExt, StreamExt};

    use crate::wire_names::WireNames;

    fn events(
        bytes: &[u8],
    ) -> impl futures_util::Stream<Item = Result<eventsource_stream::Event, ModelError>> + Send + '_
    {
        futures_util::stream::iter([Ok::<_, std::convert::Infallible>(bytes.to_vec())])
            .eventsource()
            .map(|event| event.map_err(|error| ModelError::StreamCut(error.to_string())))
    }

    fn names() -> WireNames {
        WireNames::new(&["weather", "myapp::time"]).expect("valid names")
    }

    /// Bytes of an OpenAI-compatible event stream, folded into a step.
    #[cfg(feature = "openai")]
    pub fn openai_step(bytes: &[u8]) -> Result<Step, ModelError> {
        let replies = crate::openai::reply_events(events(bytes), names());
        collect_step(replies)
            .now_or_never()
            .expect("no waiting on bytes in memory")
    }

    /// Bytes of an Anthropic event stream, folded into a step.
    #[cfg(feature = "anthropic")]
    pub fn anthropic_step(bytes: &[u8]) -> Result<Step, ModelError> {
        let replies = crate::anthropic::reply_events(events(bytes), names());
        collect_step(replies)
            .now_or_never()
            .expect("no waiting on bytes in memory")
    }
}
