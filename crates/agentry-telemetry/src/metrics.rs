//! The GenAI client metrics (`gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration`), recorded through the global meter
//! provider: nothing is kept when none is installed.

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;

/// The buckets the conventions give `gen_ai.client.token.usage`.
pub const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The buckets the conventions give `gen_ai.client.operation.duration` (seconds).
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// What a metric point is about: the operation, who serves it, the model.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    /// `gen_ai.operation.name`: `chat`, `embeddings`, …
    pub name: &'a str,
    /// `gen_ai.provider.name`.
    pub provider: &'a str,
    /// `gen_ai.request.model`.
    pub model: &'a str,
}

impl Operation<'_> {
    fn attributes(&self) -> Vec<KeyValue> {
        vec![
            KeyValue::new("gen_ai.operation.name", self.name.to_owned()),
            KeyValue::new("gen_ai.provider.name", self.provider.to_owned()),
            KeyValue::new("gen_ai.request.model", self.model.to_owned()),
        ]
    }
}

fn token_usage() -> Histogram<u64> {
    opentelemetry::global::meter("agentry")
        .u64_histogram("gen_ai.client.token.usage")
        .with_unit("{token}")
        .with_description("Number of input and output tokens used.")
        .with_boundaries(TOKEN_BUCKETS.to_vec())
        .build()
}

fn operation_duration() -> Histogram<f64> {
    opentelemetry::global::meter("agentry")
        .f64_histogram("gen_ai.client.operation.duration")
        .with_unit("s")
        .with_description("GenAI operation duration.")
        .with_boundaries(DURATION_BUCKETS.to_vec())
        .build()
}

/// Record an operation's input and output tokens, one point per token type
/// (`gen_ai.token.type`).
pub fn record_tokens(operation: Operation<'_>, input: u64, output: u64) {
    let histogram = token_usage();
    for (kind, count) in [("input", input), ("output", output)] {
        let mut attributes = operation.attributes();
        attributes.push(KeyValue::new("gen_ai.token.type", kind));
        histogram.record(count, &attributes);
    }
}

/// Record how long an operation took, with `error.type` when it failed.
pub fn record_duration(operation: Operation<'_>, seconds: f64, error_type: Option<&str>) {
    let mut attributes = operation.attributes();
    if let Some(error) = error_type {
        attributes.push(KeyValue::new("error.type", error.to_owned()));
    }
    operation_duration().record(seconds, &attributes);
}
