//! The OpenAI-compatible provider against a loopback server replaying
//! Chat Completions payloads in OpenAI's documented streaming format.

mod support;

use std::time::Duration;

use agentry_core::model::{
    ChatModel, ChatRequest, FinishReason, Message, ModelError, Step, StreamEvent, ToolChoice,
    Usage, collect_step,
};
use agentry_core::tool::{ToolCall, ToolResult};
use agentry_providers::OpenAiCompatible;
use futures_util::StreamExt;
use serde_json::json;
use support::{Reply, fast_retry, fixture, serve, sse, weather_request};

fn provider(base: &str) -> OpenAiCompatible {
    OpenAiCompatible::new(format!("{base}/v1"), Some("sk-test".into()), "gpt-4o-mini")
        .with_retry(fast_retry())
}

#[tokio::test]
async fn streams_text_with_usage_and_sends_the_documented_request() {
    let server = serve(vec![sse("openai/text.sse")]).await;
    let model = provider(&server.base_url);
    let request = ChatRequest {
        temperature: Some(0.2),
        max_tokens: Some(64),
        stop: vec!["\n\n".into()],
        ..weather_request()
    };
    let events: Vec<StreamEvent> = model.stream(&request).map(Result::unwrap).collect().await;
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["It is", " sunny in", " Lima."]);
    assert_eq!(
        events[events.len() - 2],
        StreamEvent::Usage {
            usage: Usage::new(57, 6)
        }
    );
    assert_eq!(
        events.last().unwrap(),
        &StreamEvent::Finish {
            reason: FinishReason::Stop
        }
    );

    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a weather bot."},
                {"role": "user", "content": "Weather in Paris and Tokyo?"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {
                "name": "weather__get",
                "description": "Current weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
            "tool_choice": "auto",
            "max_tokens": 64,
            "temperature": 0.2,
            "stop": ["\n\n"]
        })
    );
}

#[tokio::test]
async fn assembles_two_parallel_calls_split_across_chunks() {
    let server = serve(vec![sse("openai/parallel_tool_calls.sse")]).await;
    let step = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap();
    assert_eq!(
        step,
        Step::Tool {
            calls: vec![
                ToolCall::new(
                    "call_8KcXQp2h1Zl3",
                    "weather::get",
                    json!({"city": "Paris"})
                ),
                ToolCall::new(
                    "call_Vq93LmT0aB7e",
                    "weather::get",
                    json!({"city": "Tokyo"})
                ),
            ],
            text: String::new(),
            tokens: Usage::new(84, 47),
        }
    );
}

#[tokio::test]
async fn maps_tool_calls_and_results_to_the_native_shape() {
    let server = serve(vec![sse("openai/text.sse")]).await;
    let request = ChatRequest {
        model: Some("llama3.2".into()),
        messages: vec![
            Message::user("Weather?"),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![
                    ToolCall::new("call_1", "weather::get", json!({"city": "Paris"})),
                    ToolCall::new("call_2", "weather::get", json!({"city": "Atlantis"})),
                ],
            },
            Message::tool(ToolResult::ok("call_1", json!({"sky": "clear"}))),
            Message::tool(ToolResult::error("call_2", "unknown city")),
        ],
        tool_choice: ToolChoice::Tool("weather::get".into()),
        ..weather_request()
    };
    provider(&server.base_url).step(&request).await.unwrap();
    let body = server.requests()[0].json();
    assert_eq!(
        body["model"], "llama3.2",
        "the model can be set per request"
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather__get", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "weather__get", "arguments": "{\"city\":\"Atlantis\"}"}}]})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\":\"clear\"}"})
    );
    assert_eq!(
        body["messages"][4],
        json!({"role": "tool", "tool_call_id": "call_2", "content": "error: unknown city"})
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "weather__get"}})
    );
}

#[tokio::test]
async fn a_stream_cut_midway_is_a_stream_cut_error() {
    let server = serve(vec![Reply::Sse {
        body: fixture("openai/cut.sse"),
        cut: true,
    }])
    .await;
    let error = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ModelError::StreamCut(message) if message.starts_with("the connection broke mid-stream")),
        "{error:?}"
    );

    // A body that ends cleanly but never finishes is cut too.
    let server = serve(vec![sse("openai/cut.sse")]).await;
    let error = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModelError::StreamCut("the stream ended before [DONE]".into())
    );
}

#[tokio::test]
async fn a_malformed_chunk_is_a_protocol_error() {
    let server = serve(vec![sse("openai/malformed.sse")]).await;
    let (model, request) = (provider(&server.base_url), weather_request());
    let mut stream = model.stream(&request);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first, StreamEvent::TextDelta { text: "Hel".into() });
    let error = stream.next().await.unwrap().unwrap_err();
    let ModelError::Protocol(message) = error else {
        panic!("{error:?}")
    };
    assert!(message.starts_with("malformed chunk (EOF while parsing an object at line 1 column 155): {\"id\":\"chatcmpl-AZ3n2\""), "{message}");
    assert!(
        stream.next().await.is_none(),
        "the stream ends after an error"
    );
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_server_says() {
    let server = serve(vec![
        Reply::Status {
            code: 429,
            headers: vec![
                ("retry-after-ms".into(), "300".into()),
                ("x-ratelimit-remaining-requests".into(), "0".into()),
            ],
            body: fixture("openai/error_429.json"),
        },
        sse("openai/text.sse"),
    ])
    .await;
    let step = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap();
    assert_eq!(
        step,
        Step::Final {
            text: "It is sunny in Lima.".into(),
            tokens: Usage::new(57, 6)
        }
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_millis(300),
        "retry-after-ms honoured: waited {waited:?}"
    );
}

#[tokio::test]
async fn rate_limits_that_persist_are_typed() {
    let limited = || Reply::Status {
        code: 429,
        headers: vec![("retry-after".into(), "0".into())],
        body: fixture("openai/error_429.json"),
    };
    let server = serve(vec![limited(), limited(), limited()]).await;
    let error = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModelError::RateLimited {
            attempts: 3,
            retry_after: Some(Duration::ZERO),
            message: "Rate limit reached for gpt-4o-mini in organization org-abc on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.".into(),
        }
    );
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_without_retries() {
    let server = serve(vec![Reply::Status {
        code: 401,
        headers: vec![],
        body: fixture("openai/error_401.json"),
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
            message: "Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys.".into()
        }
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let server = serve(vec![]).await; // every request gets a 500
    let error = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ModelError::Http {
            status: 500,
            message: String::new()
        }
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn connection_failures_are_transport_errors() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let error = provider(&format!("http://127.0.0.1:{port}"))
        .step(&weather_request())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ModelError::Transport(message) if message.contains("error sending request")),
        "{error:?}"
    );
}

#[tokio::test]
async fn collect_step_matches_step() {
    let server = serve(vec![sse("openai/parallel_tool_calls.sse")]).await;
    let model = provider(&server.base_url);
    let request = weather_request();
    let step = collect_step(model.stream(&request)).await.unwrap();
    assert!(matches!(step, Step::Tool { ref calls, .. } if calls.len() == 2));
}

#[tokio::test]
async fn a_structured_answer_is_asked_for_with_response_format() {
    let server = serve(vec![sse("openai/text.sse"), sse("openai/text.sse")]).await;
    let model = provider(&server.base_url);
    let closed = json!({"type": "object", "properties": {"answer": {"type": "string"}},
                        "required": ["answer"], "additionalProperties": false});
    let request = ChatRequest {
        response_format: Some(agentry_core::model::ResponseFormat::new(
            "output",
            closed.clone(),
        )),
        ..weather_request()
    };
    model.step(&request).await.unwrap();
    let sent = server.requests()[0].json();
    assert_eq!(
        sent["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "output", "schema": closed, "strict": true}})
    );
    assert!(
        sent["tools"].is_array(),
        "tools stay offered beside the format"
    );
    // An optional field keeps the schema out of strict mode, which would refuse it.
    let optional = json!({"type": "object", "properties": {"answer": {"type": "string"}, "note": {"type": "string"}},
                          "required": ["answer"], "additionalProperties": false});
    let request = ChatRequest {
        response_format: Some(agentry_core::model::ResponseFormat::new("output", optional)),
        ..weather_request()
    };
    assert_eq!(
        model.request_body(&request).unwrap()["response_format"]["json_schema"]["strict"],
        json!(false)
    );
}

#[test]
fn debug_output_never_shows_an_api_key() {
    let openai = OpenAiCompatible::new("http://127.0.0.1:1/v1", Some("sk-secret-123".into()), "m");
    let embedder = agentry_providers::OpenAiEmbedder::new(
        "http://127.0.0.1:1/v1",
        Some("sk-secret-789".into()),
        "e",
        8,
    );
    for shown in [format!("{openai:?}"), format!("{embedder:?}")] {
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("\"<redacted>\""), "{shown}");
    }
}

#[tokio::test]
async fn a_huge_error_body_is_read_only_in_part_and_reported_short() {
    let body = format!(r#"{{"error": {{"message": "{}"}}}}"#, "x".repeat(5_000_000));
    let server = serve(vec![Reply::Status {
        code: 500,
        headers: Vec::new(),
        body,
    }])
    .await;
    let model = provider(&server.base_url).with_retry(agentry_providers::RetryPolicy::none());
    let error = model.step(&weather_request()).await.unwrap_err();
    let ModelError::Http {
        status: 500,
        message,
    } = &error
    else {
        panic!("{error:?}")
    };
    assert!(
        message.chars().count() < 600,
        "{} characters",
        message.chars().count()
    );
}

#[tokio::test]
async fn prompt_tokens_served_by_the_cache_are_reported() {
    let body = fixture("openai/text.sse").replace(
        r#""prompt_tokens_details":{"cached_tokens":0"#,
        r#""prompt_tokens_details":{"cached_tokens":48"#,
    );
    let server = serve(vec![Reply::Sse { body, cut: false }]).await;
    let step = provider(&server.base_url)
        .step(&weather_request())
        .await
        .unwrap();
    assert_eq!(step.tokens(), Usage::new(57, 6).with_cached_input(48));
}
