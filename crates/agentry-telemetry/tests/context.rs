//! Trace context across a call: what goes out names the current span, what
//! comes in parents a span, and malformed or absent context is ignored
//! (the span starts a trace of its own) rather than trusted.

use agentry_telemetry::context::{current_fields, fields_of, set_parent};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;

fn traced<T>(work: impl FnOnce() -> T) -> T {
    let provider = SdkTracerProvider::builder().build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, work)
}

fn traceparent(fields: &[(String, String)]) -> Option<&str> {
    fields
        .iter()
        .find(|(name, _)| name == "traceparent")
        .map(|(_, value)| value.as_str())
}

#[test]
fn a_span_carries_its_trace_out_and_a_child_process_takes_it_in() {
    traced(|| {
        let outer = tracing::info_span!("call");
        let sent = outer.in_scope(current_fields);
        let value = traceparent(&sent).expect("a traceparent").to_owned();
        // version-trace-span-flags
        let parts: Vec<&str> = value.split('-').collect();
        assert_eq!(parts.len(), 4, "{value}");
        assert_eq!((parts[0], parts[3]), ("00", "01"));

        // The receiving side: its span joins the same trace, under the caller.
        let served = tracing::info_span!("served");
        assert!(set_parent(&served, |name| (name == "traceparent")
            .then_some(value.as_str())));
        let onward = fields_of(&served);
        let onward = traceparent(&onward).unwrap();
        assert!(onward.starts_with(&format!("00-{}-", parts[1])), "{onward}");
        assert_ne!(onward, value, "a span of its own");
    });
}

#[test]
fn malformed_or_absent_context_is_not_taken() {
    traced(|| {
        for bad in [
            "",
            "garbage",
            "00-00000000000000000000000000000000-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
        ] {
            let span = tracing::info_span!("served");
            assert!(
                !set_parent(&span, |name| (name == "traceparent").then_some(bad)),
                "{bad:?} was taken"
            );
        }
        let span = tracing::info_span!("served");
        assert!(!set_parent(&span, |_| None));
        // Outside any span there is nothing to send.
        assert!(current_fields().is_empty());
    });
}
