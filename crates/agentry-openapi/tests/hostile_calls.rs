//! Hostile input and hostile servers, against a real HTTP server on
//! loopback that records what reaches it: path parameters never leave the
//! base path (nothing is sent, so the API key stays home), a huge or endless
//! response is refused within the toolset's limit, a redirect out of the
//! base path is not followed, and a YAML alias bomb or deep nesting in a
//! specification is refused before it is read.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentry_core::tool::{Capabilities, Capability, ToolCall, ToolContext, ToolResult, Toolbox};
use agentry_openapi::{OpenApiError, OpenApiToolset};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server answers, chosen by the request's path.
fn answer(path: &str) -> Answer {
    match path {
        "/api/big" => Answer::Flood { declared: None },
        "/api/declared" => Answer::Flood {
            declared: Some(200 << 20),
        },
        "/api/broken" => Answer::FloodError,
        "/api/hop" => Answer::Redirect("302 Found", "/admin"),
        "/api/hop307" => Answer::Redirect("307 Temporary Redirect", "/api/../admin/steal"),
        "/api/sibling" => Answer::Redirect("302 Found", "/apix/steal"),
        "/api/inside" => Answer::Redirect("302 Found", "/api/moved"),
        _ => Answer::Echo,
    }
}

enum Answer {
    /// `{"path": …}`, 200.
    Echo,
    /// 200 with `x` in 64 KiB pieces until the client goes away: chunked,
    /// or under a `content-length` of `declared` bytes.
    Flood { declared: Option<u64> },
    /// 500 with `e` until the client goes away.
    FloodError,
    /// A redirect: status line and `location`.
    Redirect(&'static str, &'static str),
}

/// Each request's path and `x-api-key` header, in order.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A server on 127.0.0.1 recording each request's path and `x-api-key`.
struct Server {
    base: String,
    seen: Seen,
}

impl Server {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let record = record.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, record).await;
                });
            }
        });
        Self { base, seen }
    }

    fn seen(&self) -> Vec<(String, Option<String>)> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(mut stream: TcpStream, seen: Seen) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
    let key = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("x-api-key"))
        .map(|(_, value)| value.trim().to_owned());
    seen.lock().unwrap().push((path.clone(), key));
    let (status, framing, piece) = match answer(path.split('?').next().unwrap_or_default()) {
        Answer::Echo => {
            let body = json!({"path": path}).to_string();
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            return stream.write_all(reply.as_bytes()).await;
        }
        Answer::Redirect(status, location) => {
            let reply = format!(
                "HTTP/1.1 {status}\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            return stream.write_all(reply.as_bytes()).await;
        }
        Answer::Flood {
            declared: Some(length),
        } => ("200 OK", format!("content-length: {length}"), b'x'),
        Answer::Flood { declared: None } => ("200 OK", "transfer-encoding: chunked".into(), b'x'),
        Answer::FloodError => (
            "500 Internal Server Error",
            "transfer-encoding: chunked".into(),
            b'e',
        ),
    };
    let chunked = framing.starts_with("transfer");
    stream
        .write_all(
            format!("HTTP/1.1 {status}\r\ncontent-type: text/plain\r\n{framing}\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let piece = vec![piece; 64 << 10];
    loop {
        if chunked {
            stream
                .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .await?;
        }
        stream.write_all(&piece).await?;
        if chunked {
            stream.write_all(b"\r\n").await?;
        }
    }
}

const SPEC: &str = r#"{
  "openapi": "3.0.3",
  "info": {"title": "T", "version": "1"},
  "paths": {
    "/users/{a}/{b}/profile": {"get": {
      "operationId": "profile",
      "parameters": [
        {"name": "a", "in": "path", "required": true, "schema": {"type": "string"}},
        {"name": "b", "in": "path", "required": true, "schema": {"type": "string"}}
      ],
      "responses": {"200": {"description": "ok"}}
    }},
    "/../admin": {"get": {"operationId": "escape", "responses": {"200": {"description": "ok"}}}},
    "/big": {"get": {"operationId": "big", "responses": {"200": {"description": "ok"}}}},
    "/declared": {"get": {"operationId": "declared", "responses": {"200": {"description": "ok"}}}},
    "/broken": {"get": {"operationId": "broken", "responses": {"200": {"description": "ok"}}}},
    "/hop": {"get": {"operationId": "hop", "responses": {"200": {"description": "ok"}}}},
    "/hop307": {"get": {"operationId": "hop307", "responses": {"200": {"description": "ok"}}}},
    "/sibling": {"get": {"operationId": "sibling", "responses": {"200": {"description": "ok"}}}},
    "/inside": {"get": {"operationId": "inside", "responses": {"200": {"description": "ok"}}}}
  }
}"#;

/// The toolset against `server`, with an API key, and the context granting its host.
fn setup(server: &Server, limit: Option<usize>) -> (Toolbox, ToolContext) {
    let mut toolset = OpenApiToolset::from_text(SPEC)
        .unwrap()
        .base_url(format!("{}/api", server.base))
        .header("X-Api-Key", "k-secret");
    if let Some(limit) = limit {
        toolset = toolset.max_response_bytes(limit);
    }
    let grant = Capability::net(toolset.host_grant());
    let tools = Toolbox::for_agent(toolset.tools()).unwrap();
    let ctx = ToolContext::new().with_capabilities(Capabilities::from([grant]));
    (tools, ctx)
}

async fn call(tools: &Toolbox, ctx: &ToolContext, name: &str, input: Value) -> ToolResult {
    let call = tools.dispatch_with(ToolCall::new("1", name, input), ctx);
    tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the call ends within 60 s (else it hangs)")
}

#[tokio::test]
async fn path_parameters_never_leave_the_base_path() {
    let server = Server::start().await;
    let (tools, ctx) = setup(&server, None);
    let refused = |name: &str, value: &str| {
        ToolResult::error(
            "1",
            format!(
                "invalid input for tool \"t.profile\":\n- /{name}: \"{value}\" is not allowed in a path parameter: it would move out of the operation's path"
            ),
        )
    };
    let result = call(&tools, &ctx, "t.profile", json!({"a": "..", "b": ".."})).await;
    assert_eq!(result, refused("a", ".."));
    let result = call(&tools, &ctx, "t.profile", json!({"a": "x", "b": "."})).await;
    assert_eq!(result, refused("b", "."));
    // A spec path that climbs out is refused after the URL is built.
    let result = call(&tools, &ctx, "t.escape", json!({})).await;
    assert_eq!(
        result,
        ToolResult::error(
            "1",
            "tool \"t.escape\" failed: the path /../admin resolves to /admin, outside the API's base path /api; the request was not sent"
        )
    );
    assert!(server.seen().is_empty(), "nothing reached the server");

    // `/` and a literal `%2e` are encoded: one segment each, inside the path.
    let result = call(
        &tools,
        &ctx,
        "t.profile",
        json!({"a": "%2e%2E", "b": "../../admin"}),
    )
    .await;
    let path = "/api/users/%252e%252E/..%2F..%2Fadmin/profile";
    assert_eq!(result, ToolResult::ok("1", json!({"path": path})));
    assert_eq!(
        server.seen(),
        [(path.to_owned(), Some("k-secret".to_owned()))]
    );
}

#[tokio::test]
async fn a_huge_or_endless_response_is_refused_at_the_limit() {
    let server = Server::start().await;
    let (tools, ctx) = setup(&server, None);
    let over = |name: &str, path: &str| {
        ToolResult::error(
            "1",
            format!(
                "tool \"t.{name}\" failed: GET {path} answered 200 OK with a response over 1048576 bytes, the most this toolset reads; it was not read"
            ),
        )
    };
    // Endless and chunked: reading stops past 1 MiB.
    assert_eq!(
        call(&tools, &ctx, "t.big", json!({})).await,
        over("big", "/big")
    );
    // 200 MB announced: refused before reading.
    assert_eq!(
        call(&tools, &ctx, "t.declared", json!({})).await,
        over("declared", "/declared")
    );
    // An endless error response: only the part quoted is read.
    assert_eq!(
        call(&tools, &ctx, "t.broken", json!({})).await,
        ToolResult::error(
            "1",
            format!(
                "tool \"t.broken\" failed: GET /broken answered 500 Internal Server Error: {}…",
                "e".repeat(2000)
            )
        )
    );
    // The limit is the toolset's to set: 20 bytes refuses a 40-byte answer.
    let (tools, ctx) = setup(&server, Some(20));
    let result = call(&tools, &ctx, "t.profile", json!({"a": "x", "b": "y"})).await;
    assert_eq!(
        result,
        ToolResult::error(
            "1",
            "tool \"t.profile\" failed: GET /users/{a}/{b}/profile answered 200 OK with a response over 20 bytes, the most this toolset reads; it was not read"
        )
    );
    assert_eq!(server.seen().len(), 4);
}

#[tokio::test]
async fn a_redirect_out_of_the_base_path_is_not_followed() {
    let server = Server::start().await;
    let (tools, ctx) = setup(&server, None);
    let base = &server.base;
    let refused = |name: &str, from: &str, to: &str| {
        ToolResult::error(
            "1",
            format!(
                "tool \"t.{name}\" failed: redirect from {base}{from} to {base}{to} refused: it leaves {base}/api"
            ),
        )
    };
    let result = call(&tools, &ctx, "t.hop", json!({})).await;
    assert_eq!(result, refused("hop", "/api/hop", "/admin"));
    assert_eq!(
        server.seen(),
        [("/api/hop".to_owned(), Some("k-secret".to_owned()))],
        "only the first request reached the server"
    );
    // Dot segments are resolved before the check; a sibling path sharing
    // the prefix (`/apix`) is not under `/api`.
    let result = call(&tools, &ctx, "t.hop307", json!({})).await;
    assert_eq!(result, refused("hop307", "/api/hop307", "/admin/steal"));
    let result = call(&tools, &ctx, "t.sibling", json!({})).await;
    assert_eq!(result, refused("sibling", "/api/sibling", "/apix/steal"));
    // A redirect that stays under the base path is followed.
    let result = call(&tools, &ctx, "t.inside", json!({})).await;
    assert_eq!(result, ToolResult::ok("1", json!({"path": "/api/moved"})));
    let paths: Vec<String> = server.seen().into_iter().map(|(path, _)| path).collect();
    assert_eq!(
        paths,
        [
            "/api/hop",
            "/api/hop307",
            "/api/sibling",
            "/api/inside",
            "/api/moved"
        ]
    );
}

#[tokio::test]
async fn a_base_url_with_a_query_or_fragment_is_refused() {
    let spec = SPEC.replace(
        r#""info": {"title": "T", "version": "1"},"#,
        r#""info": {"title": "T", "version": "1"}, "servers": [{"url": "http://127.0.0.1:9/api?x=1"}],"#,
    );
    assert_eq!(
        OpenApiToolset::from_text(&spec).unwrap_err().to_string(),
        "the specification is invalid: the server URL http://127.0.0.1:9/api?x=1 has a query or fragment; a base URL is a scheme, host, port and path"
    );
    let fragment = spec.replace("/api?x=1", "/api#x");
    assert!(matches!(
        OpenApiToolset::from_text(&fragment),
        Err(OpenApiError::Invalid(_))
    ));
    // Set by the host program instead: every call is refused, nothing sent.
    let server = Server::start().await;
    let toolset = OpenApiToolset::from_text(SPEC)
        .unwrap()
        .base_url(format!("{}/api?x=1", server.base));
    let grant = Capability::net(toolset.host_grant());
    let tools = Toolbox::for_agent(toolset.tools()).unwrap();
    let ctx = ToolContext::new().with_capabilities(Capabilities::from([grant]));
    let result = call(&tools, &ctx, "t.inside", json!({})).await;
    assert_eq!(
        result,
        ToolResult::error(
            "1",
            format!(
                "tool \"t.inside\" failed: the server URL {}/api?x=1 has a query or fragment; a base URL is a scheme, host, port and path",
                server.base
            )
        )
    );
    assert!(server.seen().is_empty(), "nothing reached the server");
}

#[test]
fn a_specification_over_the_size_limit_is_refused_unread() {
    let max = agentry_openapi::MAX_SPEC_BYTES;
    assert_eq!(max, 64 << 20);
    let text = format!("openapi: 3.0.3\nx: {}\n", "x".repeat(max));
    assert_eq!(
        OpenApiToolset::from_text(&text).unwrap_err(),
        OpenApiError::TooLarge { max }
    );
    let path = std::env::temp_dir().join(format!("agentry-huge-spec-{}.yaml", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let error = OpenApiToolset::from_file(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        error.to_string(),
        "the specification is over 67108864 bytes, the most read; it was not read"
    );
}

#[test]
fn deep_yaml_nesting_in_a_specification_is_refused_before_it_is_parsed() {
    let head = "openapi: 3.0.3\ninfo: {title: T, version: '1'}\npaths: {}\n";
    let deep = |depth: usize| format!("{head}x-d: {}{}\n", "[".repeat(depth), "]".repeat(depth));
    let refused = "the specification does not parse: its YAML nests deeper than 128 levels; refused before reading it";
    // 50,000 levels: serde_yaml_ng alone spends minutes before its own limit.
    let unclosed = format!("{head}x-d: {}\n", "[".repeat(50_000));
    assert_eq!(read_within(unclosed, 5).to_string(), refused);
    assert_eq!(read_within(deep(50_000), 5).to_string(), refused);
    // Block nesting counts too (a list item per level).
    let block: String = (0..130)
        .map(|level| format!("{}- \n", " ".repeat(level * 2)))
        .collect();
    assert_eq!(
        read_within(format!("{head}x-b:\n{block}"), 5).to_string(),
        refused
    );
    // The document's mapping and 127 lists: 128 levels, what serde_yaml_ng reads.
    assert_eq!(agentry_openapi::MAX_YAML_DEPTH, 128);
    assert_eq!(OpenApiToolset::from_text(&deep(127)).unwrap().title(), "T");
    assert_eq!(read_within(deep(128), 5).to_string(), refused);
}

#[test]
fn a_yaml_alias_bomb_in_a_specification_is_refused_before_it_is_read() {
    let head = "openapi: 3.0.3\ninfo: {title: T, version: '1'}\npaths: {}\n";
    // Nested ("billion laughs").
    let mut nested = format!("{head}x-a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
    for (level, previous) in ('b'..='i').zip('a'..='h') {
        let refs = vec![format!("*{previous}"); 9].join(",");
        nested.push_str(&format!("x-{level}: &{level} [{refs}]\n"));
    }
    nested.push_str("x-bomb: *i\n");
    // Wide: one anchor on 10,000 items, used 10,000 times, just under 1 MB.
    let wide = format!(
        "{head}x-a: &a [{}]\nx-b: [{}]\n",
        vec!["x".repeat(90); 10_000].join(","),
        vec!["*a"; 10_000].join(","),
    );
    for text in [nested, wide] {
        assert_eq!(
            read_in_time(text).to_string(),
            "the specification does not parse: its YAML aliases expand to more than 100000 nodes; refused before reading it"
        );
    }
    // Anchors within reason still read.
    let fine = format!("{head}components:\n  schemas:\n    A: &s {{type: string}}\n    B: *s\n");
    let toolset = OpenApiToolset::from_text(&fine).unwrap();
    assert_eq!(toolset.title(), "T");
}

/// The error reading `text` gives; within 60 s or the test fails as hung.
fn read_in_time(text: String) -> OpenApiError {
    read_within(text, 60)
}

/// The error reading `text` gives; within `seconds` or the test fails as hung.
fn read_within(text: String, seconds: u64) -> OpenApiError {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(OpenApiToolset::from_text(&text).err()));
    receiver
        .recv_timeout(Duration::from_secs(seconds))
        .unwrap_or_else(|_| panic!("reading ends within {seconds} s (else it hangs)"))
        .expect("refused")
}
