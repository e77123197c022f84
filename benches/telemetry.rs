//! What tracing costs an agent run: the same run (one tool call, then an
//! answer, on a scripted model) with telemetry off, as `agentry` leaves it
//! when nothing names a collector (no subscriber installed), and on (the
//! OpenTelemetry layer agentry-telemetry installs, with the SDK recording
//! every span but exporting nowhere, so only instrumentation is measured).
//!
//! Run: `cargo bench -p agentry-benches --bench telemetry`

use std::hint::black_box;

use agentry::agent::Agent;
use agentry::model::{ScriptedModel, Step, Usage};
use agentry::tool::{ToolCall, function};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

/// An agent whose model calls `add` once, then answers.
fn agent() -> Agent {
    let add = function("add")
        .arg::<i64>("x", "First")
        .arg::<i64>("y", "Second")
        .handler(|a: Value| {
            Ok::<_, String>(a["x"].as_i64().unwrap_or(0) + a["y"].as_i64().unwrap_or(0))
        })
        .build()
        .expect("a valid tool");
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("c1", "utils.add", json!({"x": 2, "y": 3}))],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: "5".into(),
            tokens: Usage::new(12, 1),
        });
    Agent::builder(model)
        .tool(add)
        .build()
        .expect("a valid agent")
}

fn bench_telemetry(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("agent_run_telemetry");
    group.bench_function("off (no subscriber)", |b| {
        b.iter_batched(
            agent,
            |agent| black_box(runtime.block_on(agent.run("What is 2 + 3?"))),
            BatchSize::SmallInput,
        )
    });
    let provider = SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("bench")));
    let _on = tracing::subscriber::set_default(subscriber);
    group.bench_function("on (OpenTelemetry layer, spans recorded)", |b| {
        b.iter_batched(
            agent,
            |agent| black_box(runtime.block_on(agent.run("What is 2 + 3?"))),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_telemetry);
criterion_main!(benches);
