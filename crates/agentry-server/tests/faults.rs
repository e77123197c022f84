//! Bad input and faults, each with its exact outcome: malformed JSON, the
//! wrong content type, an oversized body, unknown fields, bad session ids,
//! a model that fails mid-stream, a client that goes away mid-stream, and
//! a key over its limit of running requests.

mod support;

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use support::{DripModel, serve, sse};

#[tokio::test(flavor = "multi_thread")]
async fn malformed_requests_get_clear_errors_and_store_nothing() {
    let server = serve(DripModel::new("Hi.", 0), |s| s.max_body_bytes(1024)).await;
    let turn = format!("{}/v1/sessions/s/turns", server.url);
    let post = |body: reqwest::Body, content_type: &str| {
        server
            .http
            .post(&turn)
            .bearer_auth("alice-key")
            .header("Content-Type", content_type)
            .body(body)
            .send()
    };
    let cases: Vec<(reqwest::Body, &str, u16, &str, &str)> = vec![
        (
            "{\"text\": ".into(),
            "application/json",
            400,
            "invalid_json",
            "EOF while parsing",
        ),
        (
            "text=hi".into(),
            "application/x-www-form-urlencoded",
            415,
            "unsupported_media_type",
            "Content-Type: application/json",
        ),
        (
            r#"{"txt": "hi"}"#.into(),
            "application/json",
            422,
            "invalid_body",
            "the body does not fit the TurnRequest schema: (root): Additional properties are not allowed ('txt' was unexpected); (root): \"text\" is a required property",
        ),
        (
            r#"{"text": 5}"#.into(),
            "application/json",
            422,
            "invalid_body",
            "/text: 5 is not of type \"string\"",
        ),
        // Shapes serde alone would take: a list for an object, a fraction for a count.
        (
            r#"{"text": "hi", "recall_opts": [3, 0.5]}"#.into(),
            "application/json",
            422,
            "invalid_body",
            "/recall_opts: [3,0.5] is not of type \"object\"",
        ),
        (
            r#"{"text": "hi", "attachments": [{"name": "a.txt", "size": 1.5}]}"#.into(),
            "application/json",
            422,
            "invalid_body",
            "/attachments/0/size: 1.5 is not of types \"null\", \"integer\"",
        ),
        (
            r#"{"text": "hi", "recall_opts": {"min_score": 2}}"#.into(),
            "application/json",
            422,
            "invalid_body",
            "/recall_opts/min_score: 2 is greater than the maximum of 1",
        ),
        (
            r#"{"text": "   "}"#.into(),
            "application/json",
            400,
            "bad_request",
            "`text` must not be empty",
        ),
        (
            format!(r#"{{"text": "{}"}}"#, "x".repeat(2000)).into(),
            "application/json",
            413,
            "payload_too_large",
            "length limit",
        ),
    ];
    for (body, content_type, status, code, says) in cases {
        let response = post(body, content_type).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{code}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], code, "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{code}: {message}");
    }
    let bad_id = server
        .http
        .post(format!("{}/v1/sessions/a%20b/turns", server.url))
        .bearer_auth("alice-key")
        .json(&json!({"text": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad_id.status(), 400);
    let unknown_route = server
        .http
        .get(format!("{}/v2/nothing", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown_route.status(), 404);
    assert!(
        server.store.is_empty(),
        "no malformed request stored anything"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_failing_mid_stream_gives_an_error_event_and_keeps_the_user_turn() {
    let mut model = DripModel::new("one two three four", 5);
    model.fail_after = Some(2);
    let server = serve(model, |s| s).await;
    let response = server
        .http
        .post(format!("{}/v1/sessions/s/turns", server.url))
        .bearer_auth("alice-key")
        .header("Accept", "text/event-stream")
        .json(&json!({"text": "count"}))
        .send()
        .await
        .unwrap();
    let events = sse(&response.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "reply:start",
            "reply:delta",
            "reply:delta",
            "reply:end",
            "error",
            "turn:end"
        ]
    );
    let error = events[4].1["message"].as_str().unwrap();
    assert!(
        error.contains("the connection to the model dropped"),
        "{error}"
    );
    assert_eq!(events[5].1["ok"], false);
    let all: Vec<_> = server
        .store
        .records()
        .into_iter()
        .map(|r| (r.role, r.text))
        .collect();
    assert_eq!(
        all,
        [("user".to_owned(), "count".to_owned())],
        "the user turn is kept; the failed reply is not stored"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_leaving_mid_stream_stops_the_turn_and_keeps_what_was_said() {
    let server = serve(DripModel::new("a b c d e f g h i j k l m n o p", 50), |s| s).await;
    let response = server
        .http
        .post(format!("{}/v1/sessions/s/turns", server.url))
        .bearer_auth("alice-key")
        .header("Accept", "text/event-stream")
        .json(&json!({"text": "letters"}))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    while seen.matches("event: reply:delta").count() < 3 {
        seen.push_str(&String::from_utf8_lossy(
            &body.next().await.unwrap().unwrap(),
        ));
    }
    drop(body);
    // The turn notices, stops, and stores the partial reply.
    let mut stored = Vec::new();
    for _ in 0..100 {
        stored = server.store.records();
        if stored.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert_eq!(
        (stored[0].role.as_str(), stored[0].text.as_str()),
        ("user", "letters")
    );
    let partial = &stored[1].text;
    assert!(partial.starts_with("a b c"), "{partial}");
    assert!(
        partial.len() < "a b c d e f g h i j k l m n o p".len(),
        "stopped early: {partial}"
    );
    // And the key's slot is free again.
    let next = server
        .http
        .post(format!("{}/v1/sessions/s/turns", server.url))
        .bearer_auth("alice-key")
        .json(&json!({"text": "again", "fallback_text": "ok"}))
        .send()
        .await
        .unwrap();
    assert_eq!(next.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_over_its_running_limit_gets_429_and_others_are_served() {
    let server = serve(DripModel::new("slow reply here", 200), |s| {
        s.max_running_per_key(1)
    })
    .await;
    let turn = |key: &'static str, session: &'static str| {
        server
            .http
            .post(format!("{}/v1/sessions/{session}/turns", server.url))
            .bearer_auth(key)
            .header("Accept", "text/event-stream")
            .json(&json!({"text": "hi"}))
            .send()
    };
    let running = turn("alice-key", "one").await.unwrap();
    assert_eq!(running.status(), 200);
    let refused = turn("alice-key", "two").await.unwrap();
    assert_eq!(refused.status(), 429);
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "too_many_requests");
    let other = turn("bob-key", "three").await.unwrap();
    assert_eq!(other.status(), 200, "bob has his own slot");
    assert!(running.text().await.unwrap().contains("turn:end"));
    other.text().await.unwrap();
}
