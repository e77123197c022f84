//! # agentry-telemetry
//!
//! OpenTelemetry for agentry. The agent loop's spans follow the GenAI
//! semantic conventions (`invoke_agent {agent}`, `chat {model}`,
//! `execute_tool {tool}`, `embeddings {model}`, `retrieval {source}`); this
//! crate carries their trace context across calls, records the GenAI client
//! metrics, holds the opt-in for message content, and (feature `export`)
//! sends it all over OTLP.
//!
//! ```
//! use agentry_telemetry::{context, metrics};
//!
//! // A call going out writes the current span's context into its headers
//! // (or MCP `_meta`); outside a traced span there is none.
//! let fields = context::current_fields();
//! assert!(fields.is_empty());
//!
//! // Metrics go to the global meter provider: a no-op until one is set.
//! let chat = metrics::Operation { name: "chat", provider: "openai", model: "gpt-4o" };
//! metrics::record_tokens(chat, 120, 8);
//! metrics::record_duration(chat, 0.4, None);
//!
//! // Content on spans is opt-in.
//! assert!(!agentry_telemetry::capture_content());
//! ```
//!
//! With `export`, a program turns export on from the standard environment
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, …) or a
//! `TelemetryConfig`, and keeps the guard until it exits:
//!
//! ```no_run
//! # #[cfg(feature = "export")]
//! # fn main() -> Result<(), agentry_telemetry::TelemetryError> {
//! let telemetry = agentry_telemetry::Telemetry::init(&Default::default())?;
//! // … run agents …
//! telemetry.shutdown()?; // flushes what is buffered
//! # Ok(()) }
//! # #[cfg(not(feature = "export"))] fn main() {}
//! ```

#![warn(missing_docs)]

mod content;
pub mod context;
#[cfg(feature = "export")]
mod export;
pub mod metrics;

pub use content::{CAPTURE_CONTENT_ENV, capture_content, set_capture_content};
#[cfg(feature = "export")]
pub use export::{
    DEFAULT_FILTER, DEFAULT_SERVICE_NAME, Protocol, Telemetry, TelemetryConfig, TelemetryError,
};
