//! `ModelError`: every way a model call can fail, typed so callers can decide
//! whether to retry, re-authenticate or give up.

use std::time::Duration;

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The provider is not configured (no API key, no model file, ...).
    #[error("model is not configured: {0}")]
    Config(String),
    /// The provider rejected the credentials (HTTP 401/403).
    #[error("authentication failed (HTTP {status}): {message}")]
    Auth {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Still rate limited after every retry (HTTP 429).
    #[error("rate limited after {attempts} attempts: {message}")]
    RateLimited {
        /// Attempts made.
        attempts: u32,
        /// What the server asked us to wait before the last attempt, if anything.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// Any other non-success HTTP status (after retries for 5xx).
    #[error("HTTP {status}: {message}")]
    Http {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The connection failed (after retries) or broke.
    #[error("transport error: {0}")]
    Transport(String),
    /// The model took too long: nothing arrived for a while, or the whole
    /// step went past its time limit.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The stream ended before the reply was complete.
    #[error("stream cut: {0}")]
    StreamCut(String),
    /// The provider sent something that does not follow its protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The provider reported an error inside the stream.
    #[error("provider error: {0}")]
    Provider(String),
    /// A local model failed.
    #[error("local model error: {0}")]
    Local(String),
}
