//! Attacks from outside, over raw TCP, each with its exact outcome: a web
//! page that rebinds its own DNS name to 127.0.0.1 and drives a keyless
//! server (a turn, the messages, the approval of a destructive call), a
//! page of another site posting a form or a JSON body, and clients that
//! hold connections open without finishing a request (slow loris).

#[path = "probes/crowding.rs"]
mod crowding;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentry_agent::Agent;
use agentry_server::ApiKeys;
use agentry_store::SqliteStore;
use serde_json::{Value, json};
use support::{DripModel, Running};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An answer read off the wire.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn address(server: &Running) -> String {
    server.url.trim_start_matches("http://").to_owned()
}

/// Send `head` (lines without the final blank line) and `body` on a new
/// connection that closes after the answer; the answer.
async fn exchange(server: &Running, head: &[&str], body: &str) -> Answer {
    let mut request = head.join("\r\n");
    request.push_str(&format!(
        "\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = TcpStream::connect(address(server)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    read_answer(&mut stream).await
}

/// Read one answer up to the end of the connection.
async fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("the server answers within 10 s")
        .unwrap();
    parse(&String::from_utf8_lossy(&raw))
}

fn parse(raw: &str) -> Answer {
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap_or("")[9..12].parse().unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn error(message: &str, kind: &str, code: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "code": code}})
}

/// A keyless server whose agent runs turns durably in a fresh SQLite file
/// and calls `delete` (counted in `runs`) until approved.
async fn keyless_durable(name: &str, runs: Arc<AtomicUsize>) -> Running {
    let dir = std::env::temp_dir().join(format!("agentry-probes-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let journal = Arc::new(SqliteStore::open(dir.join("runs.db")).unwrap());
    let agent = Agent::builder(support::deleting_model("a.log", "", "Done: "))
        .tool(support::delete_tool(runs))
        .build()
        .unwrap();
    support::serve_agent(agent, |s| {
        s.api_keys(ApiKeys::default()).durable_runs(journal)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_rebinding_its_name_to_loopback_cannot_drive_a_keyless_server() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = keyless_durable("rebind", runs.clone()).await;
    let port = address(&server).rsplit_once(':').unwrap().1.to_owned();
    let evil = format!("Host: evil.example:{port}");
    let evil_origin = format!("Origin: http://evil.example:{port}");
    let refused = error(
        &format!(
            "this server does not answer to the Host `evil.example:{port}` (it answers to \
             `localhost`, `127.0.0.1`, `[::1]`, `127.0.0.1:{port}`): a server reached by \
             another name must be told it (`--allow-host`)"
        ),
        "permission_error",
        "forbidden",
    );
    // What the page's script would send, same-origin in the browser's eyes.
    let turn = r#"{"text": "delete a.log", "payload": {"message_id": "m1"}}"#;
    for (head, body) in [
        (
            vec![
                "POST /v1/sessions/files/turns HTTP/1.1",
                &evil,
                &evil_origin,
                "Content-Type: application/json",
            ],
            turn,
        ),
        (vec!["GET /v1/sessions/files/messages HTTP/1.1", &evil], ""),
        (vec!["GET / HTTP/1.1", &evil], ""),
        (
            vec![
                "POST /v1/runs/files~m1/resume HTTP/1.1",
                &evil,
                "Content-Type: application/json",
            ],
            "",
        ),
    ] {
        let answer = exchange(&server, &head, body).await;
        assert_eq!(answer.status, 403, "{head:?}: {answer:?}");
        assert_eq!(answer.json(), refused, "{head:?}");
    }
    assert!(server.store.is_empty(), "no turn ran");
    // The health probes say "ok" to anyone.
    let probe = exchange(&server, &["GET /healthz HTTP/1.1", &evil], "").await;
    assert_eq!((probe.status, probe.body.as_str()), (200, "ok"));

    // The user's own page starts the turn: the call waits for approval.
    let own = format!("Host: 127.0.0.1:{port}");
    let own_origin = format!("Origin: http://127.0.0.1:{port}");
    let started = exchange(
        &server,
        &[
            "POST /v1/sessions/files/turns HTTP/1.1",
            &own,
            &own_origin,
            "Content-Type: application/json",
        ],
        turn,
    )
    .await;
    assert_eq!(started.status, 200, "{started:?}");
    assert_eq!(started.json()["waiting"]["run"], "files~m1");
    // The rebound page approves it; then a page of another site tries,
    // by JSON and by a form (a simple request, sent without a preflight).
    let approve = r#"{"call_id": "c1", "decision": "approve"}"#;
    let approval = "POST /v1/runs/files~m1/approvals HTTP/1.1";
    let by_rebinding = exchange(
        &server,
        &[
            approval,
            &evil,
            &evil_origin,
            "Content-Type: application/json",
        ],
        approve,
    )
    .await;
    assert_eq!(by_rebinding.status, 403);
    assert_eq!(by_rebinding.json(), refused);
    let foreign = error(
        "a page of the origin `http://evil.example` may not call this server: only its own \
         pages and the allowed origins (`--allow-origin`) may",
        "permission_error",
        "forbidden",
    );
    for content_type in ["Content-Type: application/json", "Content-Type: text/plain"] {
        let answer = exchange(
            &server,
            &[approval, &own, "Origin: http://evil.example", content_type],
            approve,
        )
        .await;
        assert_eq!(answer.status, 403, "{content_type}");
        assert_eq!(answer.json(), foreign, "{content_type}");
    }
    // A form post or a bare POST with no Origin at all (an older browser's
    // form, or a page's `navigator.sendBeacon`): not JSON, so refused.
    let simple = error(
        "send `Content-Type: application/json` with every POST, even one without a body: a \
         page of any site may send a POST of another type without asking first",
        "invalid_request_error",
        "unsupported_media_type",
    );
    for head in [
        vec!["POST /v1/runs/files~m1/resume HTTP/1.1", own.as_str()],
        vec![
            "POST /v1/runs/files~m1/resume HTTP/1.1",
            &own,
            "Content-Type: text/plain",
        ],
        vec![
            approval,
            &own,
            "Content-Type: application/x-www-form-urlencoded",
        ],
    ] {
        let answer = exchange(&server, &head, approve).await;
        assert_eq!(answer.status, 415, "{head:?}");
        assert_eq!(answer.json(), simple, "{head:?}");
    }
    let cross_site = exchange(
        &server,
        &[
            "DELETE /v1/sessions/files HTTP/1.1",
            &own,
            "Sec-Fetch-Site: cross-site",
        ],
        "",
    )
    .await;
    assert_eq!(cross_site.status, 403);
    assert_eq!(
        cross_site.json(),
        error(
            "a page of another site may not change anything here (`Sec-Fetch-Site: cross-site`)",
            "permission_error",
            "forbidden"
        )
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the destructive call never ran"
    );

    // The user's own page approves it: the call runs once.
    let approved = exchange(
        &server,
        &[
            approval,
            &own,
            &own_origin,
            "Content-Type: application/json",
        ],
        approve,
    )
    .await;
    assert_eq!(approved.status, 200, "{approved:?}");
    assert_eq!(approved.json()["answer"], "Done: deleted a.log");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn hosts_and_origins_it_is_told_are_answered_and_no_others() {
    let server = support::serve(DripModel::new("Hi.", 0), |s| {
        s.allow_hosts(["agent.example".parse().unwrap()])
            .allow_origins(["https://agent.example".parse().unwrap()])
    })
    .await;
    let key = "Authorization: Bearer alice-key";
    let models = |host: &'static str| {
        let server = &server;
        async move {
            exchange(server, &["GET /v1/models HTTP/1.1", host, key], "")
                .await
                .status
        }
    };
    assert_eq!(models("Host: agent.example").await, 200);
    assert_eq!(models("Host: AGENT.example:8443").await, 200);
    assert_eq!(models("Host: localhost:1").await, 200);
    assert_eq!(
        models("Host: other.example").await,
        403,
        "a key does not widen it"
    );
    let twice = exchange(
        &server,
        &[
            "GET /v1/models HTTP/1.1",
            "Host: localhost",
            "Host: evil.example",
            key,
        ],
        "",
    )
    .await;
    assert_eq!(twice.status, 400);
    assert_eq!(
        twice.json(),
        error(
            "the request names more than one `Host`",
            "invalid_request_error",
            "bad_request"
        )
    );
    let absolute = exchange(
        &server,
        &[
            "GET http://evil.example/v1/models HTTP/1.1",
            "Host: localhost",
            key,
        ],
        "",
    )
    .await;
    assert_eq!(
        absolute.status, 403,
        "an absolute target names its own host"
    );
    let own = format!("Host: {}", address(&server));
    // A page served as https://agent.example by a proxy in front.
    let proxied = exchange(
        &server,
        &[
            "POST /v1/sessions/s/turns HTTP/1.1",
            &own,
            key,
            "Origin: https://agent.example",
            "Content-Type: application/json",
        ],
        r#"{"text": "hi"}"#,
    )
    .await;
    assert_eq!(proxied.status, 200, "{proxied:?}");
    let other = exchange(
        &server,
        &[
            "POST /v1/sessions/s/turns HTTP/1.1",
            &own,
            key,
            "Origin: http://agent.example",
            "Content-Type: application/json",
        ],
        r#"{"text": "hi"}"#,
    )
    .await;
    assert_eq!(other.status, 403, "another scheme is another origin");
    // With keys, a request without one is told so, not about its content type.
    let bare = exchange(&server, &["POST /v1/runs/r/resume HTTP/1.1", &own], "").await;
    assert_eq!(bare.status, 401);
}

/// A timeout no test waits for.
const LONG: Duration = Duration::from_secs(600);

/// Open `count` connections that each send half a request line and stop.
async fn slow_loris(server: &Running, count: usize) -> Vec<TcpStream> {
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        let mut stream = TcpStream::connect(address(server)).await.unwrap();
        stream
            .write_all(b"POST /v1/sessions/s/turns HTTP/1.1\r\nHost: 127.0.0.1\r\nCont")
            .await
            .unwrap();
        held.push(stream);
    }
    held
}

/// True when the server closed `stream` (it ends, or was reset) within 10 s.
async fn closed(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await {
        Ok(Ok(0)) | Ok(Err(_)) => true,
        Ok(Ok(_)) | Err(_) => false,
    }
}

/// True when `stream` is still open with nothing to read right now.
fn open(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(stream.try_read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// `held` slow connections are open, then a keyed client asks: it is
/// answered, and exactly `held + 1 - room` slow ones were closed (first
/// those the server had read nothing of yet, then the oldest).
async fn a_keyed_client_is_served_beside(server: &Running, held: usize, room: usize) {
    let loris = slow_loris(server, held).await;
    let asked = tokio::time::timeout(
        Duration::from_secs(10),
        reqwest::Client::new()
            .get(format!("{}/v1/models", server.url))
            .bearer_auth("alice-key")
            .send(),
    )
    .await
    .expect("the keyed client is answered within 10 s")
    .unwrap();
    assert_eq!(asked.status(), 200);
    let evicted = held + 1 - room;
    let shut = || loris.iter().filter(|stream| !open(stream)).count();
    let waited = tokio::time::Instant::now();
    while shut() < evicted && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A moment more, in case any more were to close.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(shut(), evicted, "slow connections closed");
}

#[tokio::test(flavor = "multi_thread")]
async fn six_hundred_slow_connections_from_one_address_do_not_starve_a_keyed_client() {
    // The default caps; timeouts long enough not to close anything here.
    let server = support::serve(DripModel::new("Hi.", 0), |s| {
        s.header_read_timeout(LONG).idle_timeout(LONG)
    })
    .await;
    let room = agentry_server::DEFAULT_MAX_CONNECTIONS_PER_PEER;
    a_keyed_client_is_served_beside(&server, 600, room).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_total_of_connections_is_bounded_by_closing_the_longest_waiting() {
    let server = support::serve(DripModel::new("Hi.", 0), |s| {
        s.max_connections(40)
            .max_connections_per_peer(1000)
            .header_read_timeout(LONG)
            .idle_timeout(LONG)
    })
    .await;
    a_keyed_client_is_served_beside(&server, 100, 40).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_half_sent_head_a_silent_connection_and_an_idle_one_are_closed() {
    let server = support::serve(DripModel::new("Hi.", 0), |s| {
        s.header_read_timeout(Duration::from_millis(500))
            .idle_timeout(Duration::from_secs(1))
    })
    .await;
    let mut half = slow_loris(&server, 1).await.remove(0);
    let mut silent = TcpStream::connect(address(&server)).await.unwrap();
    let mut idle = TcpStream::connect(address(&server)).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\nok") {
        let mut chunk = [0u8; 1024];
        let read = idle.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the answer ends early: {answer:?}");
        answer.extend_from_slice(&chunk[..read]);
    }
    assert!(answer.starts_with(b"HTTP/1.1 200 OK"));
    assert!(closed(&mut half).await, "half a head is closed");
    assert!(
        closed(&mut silent).await,
        "a connection that sends nothing is closed"
    );
    assert!(
        closed(&mut idle).await,
        "a kept-alive connection left idle is closed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_body_that_stops_coming_is_closed() {
    let server = support::serve(DripModel::new("Hi.", 0), |s| {
        s.header_read_timeout(Duration::from_secs(1))
            .idle_timeout(Duration::from_secs(1))
    })
    .await;
    let mut stream = TcpStream::connect(address(&server)).await.unwrap();
    stream
        .write_all(
            b"POST /v1/sessions/s/turns HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \
              alice-key\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n\
              {\"text\": ",
        )
        .await
        .unwrap();
    assert!(closed(&mut stream).await, "a stalled body is closed");
    assert!(server.store.is_empty(), "no turn ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quiet_event_stream_outlives_the_timeouts() {
    // Each piece comes 1.5 s after the last: longer than either timeout.
    let server = support::serve(DripModel::new("slow quiet reply", 1500), |s| {
        s.header_read_timeout(Duration::from_secs(1))
            .idle_timeout(Duration::from_secs(1))
    })
    .await;
    let events = server
        .post_events("/v1/sessions/s/turns", "alice-key", &json!({"text": "hi"}))
        .await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "reply:start",
            "reply:delta",
            "reply:delta",
            "reply:delta",
            "reply:end",
            "turn:end"
        ]
    );
    assert_eq!(events[5].1["ok"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_address_whose_connections_are_all_busy_gets_429() {
    let server = support::serve(DripModel::new("a b c d e f g h i j", 300), |s| {
        s.max_connections_per_peer(2)
    })
    .await;
    let body = r#"{"text": "hi"}"#;
    let turn = format!(
        "POST /v1/sessions/s/turns HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \
         alice-key\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(address(&server)).await.unwrap();
        stream.write_all(turn.as_bytes()).await.unwrap();
        let mut start = [0u8; 64];
        let read = stream.read(&mut start).await.unwrap();
        assert!(start[..read].starts_with(b"HTTP/1.1 200 OK"));
        busy.push(stream);
    }
    let refused = exchange(&server, &["GET /v1/models HTTP/1.1", "Host: localhost"], "").await;
    assert_eq!(refused.status, 429, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(
        refused.json(),
        error(
            "your address already has 2 connections open, each with a request running; wait \
             for one to finish",
            "rate_limit_error",
            "too_many_connections"
        )
    );
    drop(busy);
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_lets_a_running_stream_finish_then_serve_returns() {
    use agentry_core::embed::KeywordEmbedder;
    use agentry_core::memory::{InMemoryStore, Memory};
    let agent = Agent::builder(DripModel::new("one two three four", 100))
        .build()
        .unwrap();
    let memory = Memory::new(InMemoryStore::new(), KeywordEmbedder::new(["x"]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(
        agentry_server::AgentServer::new("helper", agent, memory).serve(listener, async {
            let _ = stopped.await;
        }),
    );
    let mut response = reqwest::Client::new()
        .post(format!("{url}/v1/sessions/s/turns"))
        .header("Accept", "text/event-stream")
        .json(&json!({"text": "count"}))
        .send()
        .await
        .unwrap();
    let mut seen = String::from_utf8_lossy(&response.chunk().await.unwrap().unwrap()).into_owned();
    stop.send(()).unwrap();
    while let Some(chunk) = response.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("event: turn:end"), "{seen}");
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve returns within 10 s of the stream's end")
        .unwrap()
        .unwrap();
}
