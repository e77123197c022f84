//! The Anthropic provider against a loopback server replaying Messages API
//! payloads in Anthropic's documented streaming format.

mod support;

use std::time::Duration;

use agentry_core::model::{
    ChatModel, ChatRequest, Message, ModelError, Step, StreamEvent, ToolChoice, Usage,
};
use agentry_core::tool::{ToolCall, ToolResult};
use agentry_providers::Anthropic;
use futures_util::StreamExt;
use serde_json::json;
use support::{Reply, fast_retry, fixture, serve, sse, weather_request};

fn provider(base: &str) -> Anthropic {
    Anthropic::new("sk-ant-test", "claude-sonnet-4-5")
        .with_base_url(base)
        .with_retry(fast_retry())
}

#[tokio::test]
async fn streams_text_with_usage_and_sends_the_documented_request() {
    let server = serve(vec![sse("anthropic/text.sse")]).await;
    let step = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap();
    assert_eq!(
        step,
        Step::Final {
            text: "It is sunny in Lima.".into(),
            tokens: Usage::new(25, 15)
        }
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Tokyo?"}]}],
            "stream": true,
            "system": "You are a weather bot.",
            "tools": [{"name": "weather__get",
                       "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                       "description": "Current weather for a city."}],
            "tool_choice": {"type": "auto"}
        })
    );
}

#[tokio::test]
async fn assembles_two_parallel_tool_uses_split_across_deltas() {
    let server = serve(vec![sse("anthropic/parallel_tool_use.sse")]).await;
    let step = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap();
    assert_eq!(
        step,
        Step::Tool {
            calls: vec![
                ToolCall::new(
                    "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                    "weather::get",
                    json!({"city": "Paris"})
                ),
                ToolCall::new(
                    "toolu_01Ab2cDe3FgH4iJ5kL6mN7oP",
                    "weather::get",
                    json!({"city": "Tokyo"})
                ),
            ],
            text: "I'll check both cities.".into(),
            tokens: Usage::new(472, 89),
        }
    );
}

#[tokio::test]
async fn maps_tool_results_to_tool_result_blocks_with_is_error() {
    let server = serve(vec![sse("anthropic/text.sse")]).await;
    let request = ChatRequest {
        messages: vec![
            Message::user("Weather?"),
            Message::Assistant {
                text: "Checking.".into(),
                tool_calls: vec![
                    ToolCall::new("toolu_1", "weather::get", json!({"city": "Paris"})),
                    ToolCall::new("toolu_2", "weather::get", json!({"city": "Atlantis"})),
                ],
            },
            Message::tool(ToolResult::ok("toolu_1", json!({"sky": "clear"}))),
            Message::tool(ToolResult::error("toolu_2", "unknown city")),
        ],
        tool_choice: ToolChoice::Required,
        max_tokens: Some(100),
        temperature: Some(0.5),
        stop: vec!["END".into()],
        ..weather_request()
    };
    provider(&server.base_url).step(&request).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather__get", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "weather__get", "input": {"city": "Atlantis"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"sky\":\"clear\"}", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "unknown city", "is_error": true}]}
        ])
    );
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        (body["max_tokens"].clone(), body["temperature"].clone()),
        (json!(100), json!(0.5))
    );
    assert_eq!(body["stop_sequences"], json!(["END"]));
}

#[tokio::test]
async fn a_stream_cut_midway_is_a_stream_cut_error() {
    let server = serve(vec![Reply::Sse {
        body: fixture("anthropic/cut.sse"),
        cut: true,
    }])
    .await;
    let error = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ModelError::StreamCut(m) if m.starts_with("the connection broke mid-stream")),
        "{error:?}"
    );
    let server = serve(vec![sse("anthropic/cut.sse")]).await;
    let error = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModelError::StreamCut("the stream ended before message_stop".into())
    );
}

#[tokio::test]
async fn a_malformed_event_is_a_protocol_error() {
    let server = serve(vec![sse("anthropic/malformed.sse")]).await;
    let (model, request) = (provider(&server.base_url), weather_request());
    let events: Vec<_> = model.stream(&request).collect().await;
    assert_eq!(
        events[0],
        Ok(StreamEvent::Usage {
            usage: Usage::new(12, 1)
        })
    );
    let Err(ModelError::Protocol(message)) = &events[1] else {
        panic!("{events:?}")
    };
    assert!(
        message.starts_with("malformed event (EOF while parsing a string"),
        "{message}"
    );
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_server_says() {
    let server = serve(vec![
        Reply::Status {
            code: 429,
            headers: vec![("retry-after".into(), "1".into())],
            body: fixture("anthropic/error_429.json"),
        },
        Reply::Status {
            code: 529,
            headers: vec![],
            body: fixture("anthropic/overloaded_529.json"),
        },
        sse("anthropic/text.sse"),
    ])
    .await;
    let step = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap();
    assert!(matches!(step, Step::Final { .. }));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_secs(1),
        "retry-after honoured: waited {waited:?}"
    );
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_without_retries() {
    let server = serve(vec![Reply::Status {
        code: 401,
        headers: vec![],
        body: fixture("anthropic/error_401.json"),
    }])
    .await;
    let error = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModelError::Auth {
            status: 401,
            message: "invalid x-api-key".into()
        }
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn errors_inside_the_stream_are_provider_errors() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n\
                event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let server = serve(vec![Reply::Sse {
        body: body.into(),
        cut: false,
    }])
    .await;
    let error = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert_eq!(error, ModelError::Provider("Overloaded".into()));
}

#[test]
fn from_env_needs_a_key() {
    // SAFETY: this test binary does not read the variable from other threads.
    unsafe { std::env::remove_var("ANTHROPIC_API_KEY") };
    assert_eq!(
        Anthropic::from_env("claude-sonnet-4-5").unwrap_err(),
        ModelError::Config("set ANTHROPIC_API_KEY".into())
    );
}

#[test]
fn debug_output_never_shows_an_api_key() {
    let shown = format!("{:?}", Anthropic::new("sk-ant-secret-456", "m"));
    assert!(!shown.contains("secret"), "{shown}");
    assert!(shown.contains("\"<redacted>\""), "{shown}");
}

#[tokio::test]
async fn a_structured_answer_is_asked_for_with_output_config() {
    let server = serve(vec![sse("anthropic/text.sse")]).await;
    let model = provider(&server.base_url);
    let open = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
    let request = ChatRequest {
        response_format: Some(agentry_core::model::ResponseFormat::new("output", open)),
        ..weather_request()
    };
    model.step(&request).await.unwrap();
    let sent = server.requests()[0].json();
    assert_eq!(
        sent["output_config"],
        json!({"format": {"type": "json_schema", "schema": {"type": "object",
            "properties": {"answer": {"type": "string"}}, "required": ["answer"],
            "additionalProperties": false}}})
    );
    assert!(
        sent["tools"].is_array(),
        "tools stay offered beside the format"
    );
}

fn limited(base: &str, limits: agentry_providers::StreamLimits) -> Anthropic {
    provider(base).with_limits(limits)
}

#[tokio::test]
async fn a_server_that_pings_forever_hits_the_step_limit() {
    let ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n".to_owned();
    let server = serve(vec![Reply::Endless {
        chunk: ping,
        every: Duration::from_millis(20),
    }])
    .await;
    let limits = agentry_providers::StreamLimits {
        total: Duration::from_millis(300),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let error = limited(&server.base_url, limits)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModelError::Timeout("the step went past its time limit".into())
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_server_that_goes_quiet_hits_the_idle_limit() {
    let start = fixture("anthropic/text.sse")
        .split_inclusive("\n\n")
        .next()
        .unwrap()
        .to_owned();
    let server = serve(vec![Reply::Stall { first: start }]).await;
    let limits = agentry_providers::StreamLimits {
        idle: Duration::from_millis(200),
        ..Default::default()
    };
    let error = limited(&server.base_url, limits)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModelError::Timeout("the model sent nothing for 200ms".into())
    );
}

#[tokio::test]
async fn an_endless_line_is_a_protocol_error_not_a_growing_buffer() {
    let server = serve(vec![Reply::Endless {
        chunk: "x".repeat(64 * 1024),
        every: Duration::ZERO,
    }])
    .await;
    let limits = agentry_providers::StreamLimits {
        max_line: 256 * 1024,
        ..Default::default()
    };
    let error = limited(&server.base_url, limits)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModelError::Protocol("an event-stream line is longer than 262144 bytes".into())
    );
}

#[tokio::test]
async fn cache_reads_and_writes_count_as_input_and_reads_as_cached() {
    let body = fixture("anthropic/text.sse").replace(
        r#""input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0"#,
        r#""input_tokens":25,"cache_creation_input_tokens":10,"cache_read_input_tokens":900"#,
    );
    let server = serve(vec![Reply::Sse { body, cut: false }]).await;
    let step = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap();
    assert_eq!(step.tokens(), Usage::new(935, 15).with_cached_input(900));
}
