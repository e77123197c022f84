//! Any request at all, written straight onto a socket: proptest makes
//! methods, paths over every route (with odd ids), `Host`, `Origin`,
//! `Sec-Fetch-Site`, content types, keys right and wrong, and bodies
//! (JSON of the right shape, of the wrong one, and bytes). Whatever comes,
//! the server answers with a status line and never a 5xx (the memory store
//! here cannot fail, and the model always answers), and it still answers
//! afterwards, so nothing panicked or hung.

mod support;

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use support::{DripModel, Running};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("GET".to_owned()),
        4 => Just("POST".to_owned()),
        1 => Just("DELETE".to_owned()),
        1 => Just("PUT".to_owned()),
        1 => Just("PATCH".to_owned()),
        1 => Just("OPTIONS".to_owned()),
        1 => Just("HEAD".to_owned()),
        1 => "[A-Z]{1,8}",
    ]
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("s".to_owned()),
        Just("files~m1".to_owned()),
        "[a-zA-Z0-9_.~-]{1,20}",
        "(%[0-9A-F]{2}|[a-z/.]){1,12}",
        Just("..".to_owned()),
        Just("a%20b".to_owned()),
    ]
}

fn path() -> impl Strategy<Value = String> {
    const TEMPLATES: [&str; 15] = [
        "/",
        "/page/chat.js",
        "/page/chat.css",
        "/healthz",
        "/readyz",
        "/openapi.json",
        "/metrics",
        "/v1/models",
        "/v1/chat/completions",
        "/v1/sessions/{}/turns",
        "/v1/sessions/{}/messages",
        "/v1/sessions/{}",
        "/v1/runs/{}",
        "/v1/runs/{}/approvals",
        "/v1/runs/{}/resume",
    ];
    let query = prop_oneof![
        Just(String::new()),
        "\\?[a-z_]{1,8}=[a-z0-9%]{0,8}",
        Just("?limit=-1&before=x".to_owned()),
    ];
    prop_oneof![
        6 => (proptest::sample::select(&TEMPLATES[..]), segment(), query)
            .prop_map(|(template, id, query)| format!("{}{query}", template.replace("{}", &id))),
        1 => "/[ -~]{0,40}".prop_map(|p| p.replace(' ', "%20")),
    ]
}

fn headers(port: u16) -> impl Strategy<Value = Vec<String>> {
    let host = prop_oneof![
        6 => Just(format!("Host: 127.0.0.1:{port}")),
        3 => Just("Host: localhost".to_owned()),
        1 => Just("Host: evil.example".to_owned()),
        1 => Just("Host: [::1]:1".to_owned()),
        1 => Just("Host: a@b".to_owned()),
        1 => "Host: [ -~]{0,20}",
    ];
    let origin = prop_oneof![
        6 => Just(None),
        3 => Just(Some(format!("Origin: http://127.0.0.1:{port}"))),
        1 => Just(Some("Origin: http://evil.example".to_owned())),
        1 => Just(Some("Origin: null".to_owned())),
        1 => "Origin: [ -~]{0,20}".prop_map(Some),
    ];
    let fetch_site = proptest::option::weighted(
        0.3,
        proptest::sample::select(&["same-origin", "same-site", "cross-site", "none", "x"][..])
            .prop_map(|site| format!("Sec-Fetch-Site: {site}")),
    );
    let content_type = prop_oneof![
        6 => Just(Some("application/json")),
        1 => Just(Some("application/json; charset=utf-8")),
        1 => Just(None),
        1 => proptest::sample::select(
            &[
                "text/plain",
                "application/x-www-form-urlencoded",
                "multipart/form-data; boundary=x",
                "text/event-stream",
                "",
            ][..],
        )
        .prop_map(Some),
    ]
    .prop_map(|kind| kind.map(|kind| format!("Content-Type: {kind}")));
    let key = proptest::option::of(prop_oneof![
        6 => Just("Authorization: Bearer alice-key".to_owned()),
        1 => Just("Authorization: Bearer wrong".to_owned()),
        1 => Just("Authorization: Basic YTpi".to_owned()),
        1 => "Authorization: [ -~]{0,20}",
    ]);
    let accept = proptest::option::of(
        proptest::sample::select(&["text/event-stream", "application/json", "*/*"][..])
            .prop_map(|kind| format!("Accept: {kind}")),
    );
    (host, origin, fetch_site, content_type, key, accept).prop_map(
        |(host, origin, fetch_site, content_type, key, accept)| {
            [Some(host), origin, fetch_site, content_type, key, accept]
                .into_iter()
                .flatten()
                .collect()
        },
    )
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    let text = "[ -~]{0,30}";
    prop_oneof![
        1 => Just(Vec::new()),
        3 => text.prop_map(|t| serde_json::json!({"text": t}).to_string().into_bytes()),
        3 => (text, any::<bool>()).prop_map(|(t, stream)| {
            serde_json::json!({"model": "helper", "stream": stream,
                "messages": [{"role": "user", "content": t}]})
            .to_string()
            .into_bytes()
        }),
        1 => Just(br#"{"call_id": "c1", "decision": "approve"}"#.to_vec()),
        1 => Just(br#"{"text": "hi", "recall_opts": {"limit": 99999999999}}"#.to_vec()),
        1 => proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

/// Send one raw request; the status of the answer, or what went wrong.
async fn send(
    address: &str,
    method: &str,
    path: &str,
    headers: &[String],
    body: &[u8],
) -> Result<u16, String> {
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream
        .write_all(&bytes)
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .map_err(|_| "no answer within 10 s".to_owned())?
        .map_err(|e| format!("read: {e}"))?;
    let answer = String::from_utf8_lossy(&answer);
    answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no status line: {answer:?}"))
}

fn check(server: &Running, runtime: &tokio::runtime::Runtime, cases: u32) {
    let address = server.url.trim_start_matches("http://").to_owned();
    let port: u16 = address.rsplit_once(':').unwrap().1.parse().unwrap();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (method(), path(), headers(port), body());
    let seen = std::sync::Mutex::new(std::collections::BTreeMap::<u16, usize>::new());
    let outcome = runner.run(&strategy, |(method, path, headers, body)| {
        let status = runtime.block_on(send(&address, &method, &path, &headers, &body));
        let status = status.map_err(TestCaseError::fail)?;
        *seen.lock().unwrap().entry(status).or_default() += 1;
        prop_assert!(status < 500, "{method} {path} {headers:?}: {status}");
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    let seen = seen.into_inner().unwrap();
    eprintln!("statuses seen: {seen:?}");
    // The cases reach past the guards into the handlers, and meet the guards.
    for status in [200, 400, 403, 404] {
        assert!(seen.contains_key(&status), "no {status} in {seen:?}");
    }
    let alive = runtime.block_on(send(
        &address,
        "GET",
        "/healthz",
        &["Host: localhost".to_owned()],
        b"",
    ));
    assert_eq!(alive, Ok(200), "the server still answers");
}

#[test]
fn any_request_gets_an_answer_and_none_is_a_server_error() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let keyed = runtime.block_on(support::serve(DripModel::new("Hi there.", 0), |s| {
        s.failed_keys_per_minute(1_000_000)
    }));
    check(&keyed, &runtime, 600);
    let keyless = runtime.block_on(support::serve(DripModel::new("Hi there.", 0), |s| {
        s.api_keys(agentry_server::ApiKeys::default())
    }));
    check(&keyless, &runtime, 600);
}
