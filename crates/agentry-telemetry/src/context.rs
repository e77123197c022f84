//! W3C trace context (`traceparent`, `tracestate`) carried across a call:
//! written into what goes out (HTTP headers, MCP's `_meta`) from the
//! current `tracing` span, and read from what comes in to parent a span.
//!
//! Without an OpenTelemetry layer in the subscriber the current span has no
//! trace context: nothing is written and nothing is read.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The trace-context fields of the current span, as (name, value) pairs
/// (`traceparent`, and `tracestate` when there is one); empty when the span
/// is not traced.
///
/// ```
/// // No OpenTelemetry layer here, so nothing to carry.
/// assert!(agentry_telemetry::context::current_fields().is_empty());
/// ```
pub fn current_fields() -> Vec<(String, String)> {
    fields_of(&tracing::Span::current())
}

/// The trace-context fields of `span`; empty when it is not traced.
pub fn fields_of(span: &tracing::Span) -> Vec<(String, String)> {
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return Vec::new();
    }
    let mut fields = Fields(Vec::new());
    TraceContextPropagator::new().inject_context(&context, &mut fields);
    fields.0
}

/// Make `span` a child of the remote span `field` names (a header or
/// `_meta` lookup of `traceparent` and `tracestate`). Returns whether a
/// valid parent was found and set. Call it before the span is first entered.
pub fn set_parent<'a>(span: &tracing::Span, field: impl Fn(&str) -> Option<&'a str>) -> bool {
    let found = Found(
        ["traceparent", "tracestate"]
            .into_iter()
            .filter_map(|key| field(key).map(|value| (key, value)))
            .collect(),
    );
    let context = TraceContextPropagator::new().extract(&found);
    if !context.span().span_context().is_valid() {
        return false;
    }
    span.set_parent(context).is_ok()
}

struct Fields(Vec<(String, String)>);

impl Injector for Fields {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

struct Found<'a>(Vec<(&'static str, &'a str)>);

impl Extractor for Found<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, value)| *value)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(name, _)| *name).collect()
    }
}
