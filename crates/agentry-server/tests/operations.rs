//! What an operator sees: Prometheus metrics that count what happened, a
//! per-key rate limit that answers 429 with `Retry-After`, and an address
//! throttled after too many wrong keys.

mod support;

use agentry_agent::Agent;
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::ToolCall;
use serde_json::{Value, json};
use support::DripModel;

/// The value of the sample `name{labels}` in an OpenMetrics text, if present.
fn sample(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name_and_labels)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_requests_turns_and_tool_calls() {
    let add = support::add_tool();
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![
                ToolCall::new("c1", "utils.add", json!({"x": 2, "y": 40})),
                ToolCall::new("c2", "utils.add", json!({"x": "two"})),
            ],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: "42".into(),
            tokens: Usage::new(12, 4),
        });
    let agent = Agent::builder(model).tool(add).build().unwrap();
    let server = support::serve_agent(agent, |s| s).await;
    let answer = server
        .post_json(
            "/v1/sessions/s1/turns",
            "alice-key",
            &json!({"text": "2+40?"}),
        )
        .await;
    assert_eq!(answer["ok"], true, "{answer}");
    // Unknown sessions and missing keys are counted by their route, not their path.
    let missing = server
        .get("/v1/sessions/nobody-here/messages", Some("alice-key"))
        .await;
    assert_eq!(missing.status(), 404);
    let anonymous = server.get("/metrics", None).await;
    assert_eq!(anonymous.status(), 401, "metrics need a key like the API");

    let response = server.get("/metrics", Some("bob-key")).await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = response.text().await.unwrap();
    let expect = [
        (
            r#"agentry_http_requests_total{method="POST",route="/v1/sessions/{id}/turns",status="200"}"#,
            1.0,
        ),
        (
            r#"agentry_http_requests_total{method="GET",route="/v1/sessions/{id}/messages",status="404"}"#,
            1.0,
        ),
        (
            r#"agentry_http_requests_total{method="GET",route="/metrics",status="401"}"#,
            1.0,
        ),
        (r#"agentry_turns_total{face="sessions",outcome="ok"}"#, 1.0),
        (r#"agentry_turns_running"#, 0.0),
        (
            r#"agentry_tool_calls_total{tool="utils.add",outcome="ok"}"#,
            1.0,
        ),
        (
            r#"agentry_tool_calls_total{tool="utils.add",outcome="error"}"#,
            1.0,
        ),
        (
            r#"agentry_http_request_duration_seconds_count{method="POST",route="/v1/sessions/{id}/turns"}"#,
            1.0,
        ),
    ];
    for (series, value) in expect {
        assert_eq!(sample(&text, series), Some(value), "{series} in\n{text}");
    }
    assert!(!text.contains("nobody-here"), "no caller data in labels");
    assert!(text.trim_end().ends_with("# EOF"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_over_its_rate_gets_429_with_retry_after_and_others_are_served() {
    let server = support::serve(DripModel::new("hi", 1), |s| s.requests_per_minute(3)).await;
    let get = |key: &'static str| server.get("/v1/models", Some(key));
    for _ in 0..3 {
        assert_eq!(get("alice-key").await.status(), 200);
    }
    let refused = get("alice-key").await;
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (19..=20).contains(&wait),
        "three a minute: one more in 20 s, not {wait}"
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert_eq!(
        body["error"]["message"],
        format!("this key may start 3 requests a minute; try again in {wait} s")
    );
    assert_eq!(
        get("bob-key").await.status(),
        200,
        "another key is not held back"
    );
    // Health checks and the page are never limited.
    for path in ["/healthz", "/"] {
        let response = server.get(path, None).await;
        assert_eq!(response.status(), 200, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_address_sending_wrong_keys_is_throttled_even_with_a_right_one() {
    let server = support::serve(DripModel::new("hi", 1), |s| s.failed_keys_per_minute(3)).await;
    let get = |key: Option<&'static str>| server.get("/v1/models", key);
    // No key at all is no guess: not counted.
    for _ in 0..5 {
        assert_eq!(get(None).await.status(), 401);
    }
    assert_eq!(get(Some("alice-key")).await.status(), 200);
    for guess in ["guess-1", "guess-2", "guess-3"] {
        assert_eq!(get(Some(guess)).await.status(), 401, "{guess}");
    }
    // The right key now waits too, or a guess would show when it hit.
    let refused = get(Some("alice-key")).await;
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (1..=60).contains(&wait),
        "the rest of the minute, not {wait}"
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": {
            "message": format!("3 wrong API keys came from your address within a minute; no key is checked from it for {wait} s"),
            "type": "rate_limit_error",
            "code": "too_many_failed_keys",
        }})
    );
    assert_eq!(get(Some("guess-4")).await.status(), 429);
    // Health checks and the page need no key and are not held back.
    for path in ["/healthz", "/"] {
        assert_eq!(server.get(path, None).await.status(), 200, "{path}");
    }
}
