//! # agentry-providers
//!
//! Model providers for agentry, each a [`ChatModel`](agentry_core::model::ChatModel):
//!
//! - [`OpenAiCompatible`]: OpenAI Chat Completions and the servers that speak
//!   it (Ollama, vLLM, the llama.cpp server). Reads `OPENAI_API_KEY` and `OPENAI_BASE_URL`.
//! - [`Anthropic`]: the Anthropic Messages API. Reads `ANTHROPIC_API_KEY`.
//!
//! Both stream over SSE, support parallel tool calls, report usage, map tool
//! names to provider-safe wire names and back, and retry 429, 5xx and
//! connection failures with backoff, honouring `retry-after`.
//!
//! [`net::HttpClient`] is the capability-checked HTTP client tools use.

mod anthropic;
mod embeddings;
pub mod net;
mod openai;
mod secret;
mod structured;
mod transport;
mod wire_names;

pub use anthropic::{ANTHROPIC_VERSION, Anthropic, DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_MAX_TOKENS};
pub use embeddings::{DEFAULT_EMBEDDING_BATCH, OpenAiEmbedder};
pub use openai::{DEFAULT_OPENAI_BASE_URL, OpenAiCompatible};
pub use transport::{CONNECT_TIMEOUT, RetryPolicy, StreamLimits};

/// Entry points for the fuzz targets (`fuzz/`): a provider's stream reader
/// on raw bytes, without a network. Not a stable API.
#[doc(hidden)]
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
    pub fn openai_step(bytes: &[u8]) -> Result<Step, ModelError> {
        let replies = crate::openai::reply_events(events(bytes), names());
        collect_step(replies)
            .now_or_never()
            .expect("no waiting on bytes in memory")
    }

    /// Bytes of an Anthropic event stream, folded into a step.
    pub fn anthropic_step(bytes: &[u8]) -> Result<Step, ModelError> {
        let replies = crate::anthropic::reply_events(events(bytes), names());
        collect_step(replies)
            .now_or_never()
            .expect("no waiting on bytes in memory")
    }
}
