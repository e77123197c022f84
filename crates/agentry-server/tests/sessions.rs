//! The sessions API over real HTTP: streamed and JSON turns, stored
//! messages, deletion, and the isolation between API keys.

mod support;

use serde_json::{Value, json};
use support::{DripModel, serve, sse};

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_streams_its_events_and_both_sides_are_stored() {
    let server = serve(DripModel::new("Paris is lovely in spring.", 5), |s| s).await;
    let response = server
        .http
        .post(format!("{}/v1/sessions/trip/turns", server.url))
        .bearer_auth("alice-key")
        .header("Accept", "text/event-stream")
        .json(&json!({"text": "Where should I go?", "payload": {"message_id": "m-1"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert!(response.headers().contains_key("x-request-id"));
    let events = sse(&response.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "reply:start",
            "reply:delta",
            "reply:delta",
            "reply:delta",
            "reply:delta",
            "reply:delta",
            "reply:end",
            "turn:end"
        ]
    );
    assert_eq!(events[0].1["session_id"], "trip");
    assert_eq!(events[0].1["message_id"], "m-1");
    assert_eq!(events[0].1["stream"], "helper");
    let deltas: String = events[1..6]
        .iter()
        .map(|(_, d)| d["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Paris is lovely in spring.");
    assert_eq!(events[6].1["text"], "Paris is lovely in spring.");
    assert_eq!(
        events[7].1,
        json!({"ok": true, "text": "Paris is lovely in spring."})
    );

    let messages = server
        .get_json("/v1/sessions/trip/messages", "alice-key")
        .await;
    let said: Vec<(&str, &str)> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        said,
        [
            ("user", "Where should I go?"),
            ("assistant", "Paris is lovely in spring.")
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_turn_answers_once_with_the_whole_reply() {
    let server = serve(DripModel::new("Noted.", 0), |s| s).await;
    let turn = |text: &'static str| {
        server
            .http
            .post(format!("{}/v1/sessions/s1/turns", server.url))
            .bearer_auth("bob-key")
            .json(&json!({"text": text}))
            .send()
    };
    let first: Value = turn("I love Rome.").await.unwrap().json().await.unwrap();
    assert_eq!(first["ok"], true);
    assert_eq!(first["text"], "Noted.");
    assert_eq!(first["session_id"], "s1");
    assert_eq!(
        first["message_id"].as_str().unwrap().len(),
        24,
        "a generated id"
    );
    assert_eq!(first["tool_calls"], json!([]));
    // Records are stored under bob's key, not under the bare session id.
    let stored = server.store.len();
    assert_eq!(stored, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_see_only_their_own_sessions() {
    let server = serve(DripModel::new("Hi.", 0), |s| s).await;
    let url = |path: &str| format!("{}{path}", server.url);
    let made = server
        .http
        .post(url("/v1/sessions/private/turns"))
        .bearer_auth("alice-key")
        .json(&json!({"text": "my secret plan"}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 200);
    // Bob cannot read or delete Alice's session: it does not exist for him.
    for request in [
        server.http.get(url("/v1/sessions/private/messages")),
        server.http.delete(url("/v1/sessions/private")),
    ] {
        let response = request.bearer_auth("bob-key").send().await.unwrap();
        assert_eq!(response.status(), 404);
        let body = response.text().await.unwrap();
        assert!(!body.contains("secret"), "{body}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
            "not_found"
        );
    }
    // No key, or a wrong one: 401 everywhere but health and the document.
    for (path, method) in [
        ("/v1/sessions/private/messages", "GET"),
        ("/v1/sessions/private", "DELETE"),
        ("/v1/sessions/private/turns", "POST"),
        ("/v1/models", "GET"),
        ("/v1/chat/completions", "POST"),
    ] {
        for key in [None, Some("mallory-key")] {
            let mut request = server
                .http
                .request(method.parse().unwrap(), url(path))
                .json(&json!({"text": "x"}));
            if let Some(key) = key {
                request = request.bearer_auth(key);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 401, "{method} {path} with {key:?}");
            assert_eq!(response.headers()["www-authenticate"], "Bearer");
        }
    }
    for path in ["/healthz", "/readyz", "/openapi.json"] {
        assert_eq!(
            server.http.get(url(path)).send().await.unwrap().status(),
            200,
            "{path}"
        );
    }
    // Alice deletes her session; then it is gone for her too.
    let deleted = server
        .http
        .delete(url("/v1/sessions/private"))
        .bearer_auth("alice-key")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert!(server.store.is_empty());
    let again = server
        .http
        .get(url("/v1/sessions/private/messages"))
        .bearer_auth("alice-key")
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404);
}

/// The OpenAPI document describes every route, and real answers match it.
#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_document_describes_what_the_server_answers() {
    let server = serve(DripModel::new("Fine.", 0), |s| s).await;
    let document: Value = server
        .http
        .get(format!("{}/openapi.json", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let routes: Vec<String> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect();
    assert_eq!(
        routes,
        [
            "GET /healthz",
            "GET /metrics",
            "GET /readyz",
            "POST /v1/chat/completions",
            "GET /v1/models",
            "GET /v1/runs/{id}",
            "POST /v1/runs/{id}/approvals",
            "POST /v1/runs/{id}/resume",
            "DELETE /v1/sessions/{id}",
            "GET /v1/sessions/{id}/messages",
            "POST /v1/sessions/{id}/turns",
        ]
    );
    assert_eq!(
        document["components"]["securitySchemes"]["api_key"],
        json!({"type": "http", "scheme": "bearer"})
    );
    // Each answer validates against its schema in the document.
    let check = |schema: &str, instance: &Value| {
        support::assert_conforms(&document, schema, instance);
    };
    let turn = server
        .post_json(
            "/v1/sessions/doc/turns",
            "alice-key",
            &json!({"text": "How are you?"}),
        )
        .await;
    check("TurnResponse", &turn);
    let messages = server
        .get_json("/v1/sessions/doc/messages", "alice-key")
        .await;
    check("MessagesResponse", &messages);
    let missing = server
        .get_json("/v1/sessions/nobody/messages", "alice-key")
        .await;
    check("ErrorBody", &missing);
    let completion = server
        .post_json(
            "/v1/chat/completions",
            "alice-key",
            &json!({"model": "helper", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    check("ChatCompletion", &completion);
    assert_eq!(completion["choices"][0]["message"]["content"], "Fine.");
    let models = server.get_json("/v1/models", "alice-key").await;
    check("ModelList", &models);
    assert_eq!(models["data"][0]["id"], "helper");
}

/// An agent with tools: each call and its result stream between the deltas.
#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_stream_as_events_and_come_back_in_json() {
    use agentry_agent::Agent;
    use agentry_core::model::{ScriptedModel, Step, Usage};
    use agentry_core::tool::ToolCall;

    let add = support::add_tool();
    let script = || {
        ScriptedModel::new()
            .reply(Step::Tool {
                calls: vec![ToolCall::new("c1", "utils.add", json!({"x": 2, "y": 40}))],
                text: String::new(),
                tokens: Usage::new(10, 5),
            })
            .reply(Step::Final {
                text: "It is 42.".into(),
                tokens: Usage::new(12, 4),
            })
    };
    let agent = |model| Agent::builder(model).tool(add.clone()).build().unwrap();
    let server = support::serve_agent(agent(script()), |s| s).await;
    let events = server
        .post_events(
            "/v1/sessions/math/turns",
            "alice-key",
            &json!({"text": "2 + 40?"}),
        )
        .await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "reply:start",
            "tool:call",
            "tool:result",
            "reply:delta",
            "reply:end",
            "turn:end"
        ]
    );
    assert_eq!(
        events[1].1["call"],
        json!({"id": "c1", "name": "utils.add", "input": {"x": 2, "y": 40}})
    );
    assert_eq!(events[2].1["name"], "utils.add");
    assert_eq!(
        events[2].1["result"],
        json!({"id": "c1", "output": 42, "is_error": false})
    );

    let server = support::serve_agent(agent(script()), |s| s).await;
    let answer = server
        .post_json(
            "/v1/sessions/math/turns",
            "alice-key",
            &json!({"text": "2 + 40?"}),
        )
        .await;
    assert_eq!(answer["text"], "It is 42.");
    assert_eq!(
        answer["tool_calls"],
        json!([{"call": {"id": "c1", "name": "utils.add", "input": {"x": 2, "y": 40}},
                "result": {"id": "c1", "output": 42, "is_error": false}}])
    );
}
