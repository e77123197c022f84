//! OTLP export against a plain OTLP receiver (`mock-collector`, over gRPC):
//! a run's spans arrive named and attributed as the OpenTelemetry GenAI
//! conventions say, nested agent → chat → tool (→ child agent) → chat; the
//! GenAI metrics arrive with their units; content is on spans only when
//! opted in; a tool's outgoing trace context names its `execute_tool` span;
//! a memory recall is a `retrieval` span; and a failing model marks its
//! span. Loop logic with scripted models: the real model's trace is read
//! back through Phoenix in `agentry-cli`'s `phoenix_trace` test.
//!
//! One test: the process has one global subscriber.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use agentry::agent::Agent;
use agentry::memory::{InMemoryStore, Memory, RecallOpts, Remember};
use agentry::model::{ModelError, ScriptedModel, Step, Usage};
use agentry::tool::ToolCall;
use agentry_telemetry::{Protocol, Telemetry, TelemetryConfig};
use mock_collector::MockServer;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, span, status};
use serde_json::{Value, json};

fn call(id: &str, name: &str, input: Value) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new(id, name, input)],
        text: String::new(),
        tokens: Usage::new(30, 7),
    }
}

fn answer(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(50, 9),
    }
}

fn attribute<'s>(span: &'s Span, key: &str) -> Option<&'s any_value::Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}

fn text<'s>(span: &'s Span, key: &str) -> Option<&'s str> {
    match attribute(span, key) {
        Some(any_value::Value::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attribute(span, key) {
        Some(any_value::Value::IntValue(n)) => Some(*n),
        _ => None,
    }
}

/// What a call made from inside the tool would carry.
static CARRIED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// The weather in a city.
#[agentry::tool(name = "weather", read_only)]
fn weather(city: String) -> String {
    *CARRIED.lock().unwrap() = agentry_telemetry::context::current_fields();
    format!("sunny in {city}, 21°C")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_exports_genai_spans_and_metrics_over_otlp() {
    let server = MockServer::builder().start().await.unwrap();
    let config = TelemetryConfig {
        endpoint: Some(format!("http://{}", server.addr())),
        protocol: Some(Protocol::Grpc),
        capture_content: Some(true),
        ..TelemetryConfig::default()
    };
    assert!(config.is_enabled());
    let telemetry = Telemetry::init(&config).unwrap();
    assert!(telemetry.is_exporting());

    let helper = Agent::builder(ScriptedModel::new().reply(answer("Take a hat.")))
        .system("You advise.")
        .build()
        .unwrap();
    let agent = Agent::builder(
        ScriptedModel::new()
            .reply(call("c1", "weather", json!({"city": "Paris"})))
            .reply(call("c2", "advisor", json!({"task": "Hat or not?"})))
            .reply(answer("Sunny, 21°C; take a hat.")),
    )
    .name("forecaster")
    .tool(weather::tool())
    .tool(helper.as_tool("advisor", "Ask for advice."))
    .build()
    .unwrap();
    let run = agent.run("Weather in Paris?").await;
    assert_eq!(run.text(), "Sunny, 21°C; take a hat.");

    // A failing model: its chat span and the run's are marked.
    let failing = Agent::builder(ScriptedModel::new().fail(ModelError::Timeout("slow".into())))
        .name("broken")
        .build()
        .unwrap();
    failing.run("hello").await;

    // A memory recall is a retrieval span.
    let memory = Memory::new(
        InMemoryStore::new(),
        agentry::embed::KeywordEmbedder::new(["paris", "hat"]),
    );
    memory
        .remember("s1", "Ana lives in Paris", Remember::default())
        .await
        .unwrap();
    memory
        .recall("s1", "Where does Ana live? Paris?", RecallOpts::default())
        .await
        .unwrap();

    telemetry.flush().unwrap();
    if let Err(error) = server.wait_for_spans(11, Duration::from_secs(20)).await {
        let got = server
            .with_collector(|c| {
                format!(
                    "{} spans: {:?}",
                    c.span_count(),
                    c.spans()
                        .iter()
                        .map(|s| s.span().name.clone())
                        .collect::<Vec<_>>()
                )
            })
            .await;
        panic!("spans did not arrive: {error}; received:\n{got}");
    }
    let spans: Vec<Span> = server
        .with_collector(|c| c.spans().iter().map(|s| s.span().clone()).collect())
        .await;
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let by_id: HashMap<Vec<u8>, &Span> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    let parent = |span: &Span| by_id.get(&span.parent_span_id).map(|p| p.name.as_str());
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();

    // The run: invoke_agent forecaster → chat scripted ×3, execute_tool ×2.
    let [root] = named("invoke_agent forecaster")[..] else {
        panic!("one forecaster run expected: {names:?}")
    };
    assert_eq!(text(root, "gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(text(root, "gen_ai.agent.name"), Some("forecaster"));
    assert_eq!(text(root, "gen_ai.provider.name"), Some("agentry.scripted"));
    assert_eq!(
        int(root, "gen_ai.usage.input_tokens"),
        Some(30 + 30 + 50 + 50)
    );
    assert_eq!(int(root, "gen_ai.usage.output_tokens"), Some(7 + 7 + 9 + 9));
    assert!(root.parent_span_id.is_empty());
    let chats: Vec<&Span> = named("chat scripted")
        .into_iter()
        .filter(|s| s.trace_id == root.trace_id)
        .collect();
    assert_eq!(chats.len(), 4, "three steps and the child's one: {names:?}");
    for chat in &chats {
        assert_eq!(text(chat, "gen_ai.operation.name"), Some("chat"));
        assert_eq!(text(chat, "gen_ai.request.model"), Some("scripted"));
        // In process: internal (a model over the network is a client span).
        assert_eq!(chat.kind, span::SpanKind::Internal as i32);
        assert!(int(chat, "gen_ai.usage.input_tokens").is_some());
        // Opted in: the conversation as the conventions' JSON messages.
        let input: Value =
            serde_json::from_str(text(chat, "gen_ai.input.messages").unwrap()).unwrap();
        assert_eq!(input[0]["role"], "user");
        assert!(text(chat, "gen_ai.output.messages").is_some());
    }
    let top_chats = chats
        .iter()
        .filter(|c| c.parent_span_id == root.span_id)
        .count();
    assert_eq!(top_chats, 3);

    let [tool] = named("execute_tool weather")[..] else {
        panic!("one weather call expected: {names:?}")
    };
    assert_eq!(parent(tool), Some("invoke_agent forecaster"));
    assert_eq!(text(tool, "gen_ai.tool.name"), Some("weather"));
    assert_eq!(text(tool, "gen_ai.tool.call.id"), Some("c1"));
    assert_eq!(text(tool, "gen_ai.tool.type"), Some("function"));
    assert_eq!(tool.kind, span::SpanKind::Internal as i32);
    assert_eq!(
        text(tool, "gen_ai.tool.call.arguments"),
        Some(r#"{"city":"Paris"}"#)
    );
    assert_eq!(
        text(tool, "gen_ai.tool.call.result"),
        Some(r#""sunny in Paris, 21°C""#)
    );
    // What a call from inside the tool would send: this trace, this span.
    let carried = CARRIED.lock().unwrap().clone();
    let traceparent = &carried
        .iter()
        .find(|(k, _)| k == "traceparent")
        .expect("a traceparent from inside the tool")
        .1;
    assert_eq!(
        traceparent,
        &format!("00-{}-{}-01", hex(&tool.trace_id), hex(&tool.span_id))
    );

    // The child agent's run nests under the call that started it.
    let [advise] = named("execute_tool advisor")[..] else {
        panic!("one advisor call expected: {names:?}")
    };
    let [child] = named("invoke_agent advisor")[..] else {
        panic!("the child's run expected: {names:?}")
    };
    assert_eq!(child.parent_span_id, advise.span_id);
    assert_eq!(child.trace_id, root.trace_id);
    assert_eq!(text(child, "gen_ai.agent.name"), Some("advisor"));
    assert!(chats.iter().any(|c| c.parent_span_id == child.span_id));

    // The failing run: the chat span and the agent span are errors.
    let [broken] = named("invoke_agent broken")[..] else {
        panic!("the failing run expected: {names:?}")
    };
    assert_eq!(text(broken, "error.type"), Some("model_error"));
    assert_eq!(
        broken.status.as_ref().map(|s| s.code),
        Some(status::StatusCode::Error as i32)
    );
    let failed_chat = spans
        .iter()
        .find(|s| s.parent_span_id == broken.span_id && s.name == "chat scripted")
        .expect("the failing chat span");
    assert_eq!(text(failed_chat, "error.type"), Some("timeout"));
    assert_eq!(
        failed_chat.status.as_ref().map(|s| s.code),
        Some(status::StatusCode::Error as i32)
    );

    // The recall, and the embedding inside it.
    let [recall] = named("retrieval memory")[..] else {
        panic!("the recall expected: {names:?}")
    };
    assert_eq!(text(recall, "gen_ai.operation.name"), Some("retrieval"));
    assert_eq!(text(recall, "gen_ai.data_source.id"), Some("memory"));
    assert_eq!(text(recall, "gen_ai.conversation.id"), Some("s1"));

    // Metrics: token usage per token type, and durations, as the
    // conventions name them.
    telemetry.flush().unwrap();
    server
        .wait_for_metrics(2, Duration::from_secs(20))
        .await
        .unwrap_or_else(|e| panic!("metrics did not arrive: {e}"));
    server
        .with_collector(|c| {
            c.expect_metric_with_name("gen_ai.client.token.usage")
                .with_attributes([
                    ("gen_ai.operation.name", "chat"),
                    ("gen_ai.token.type", "input"),
                    ("gen_ai.provider.name", "agentry.scripted"),
                ])
                .assert_exists();
            c.expect_metric_with_name("gen_ai.client.token.usage")
                .with_attributes([("gen_ai.token.type", "output")])
                .assert_exists();
            c.expect_metric_with_name("gen_ai.client.operation.duration")
                .with_attributes([("error.type", "timeout")])
                .assert_exists();
            let units: Vec<(String, String)> = c
                .metrics()
                .iter()
                .map(|m| (m.metric().name.clone(), m.metric().unit.clone()))
                .collect();
            assert!(units.contains(&("gen_ai.client.token.usage".into(), "{token}".into())));
            assert!(units.contains(&("gen_ai.client.operation.duration".into(), "s".into())));
        })
        .await;
    telemetry.shutdown().unwrap();
}
