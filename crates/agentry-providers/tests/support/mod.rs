//! A real HTTP/1.1 server on loopback that replays recorded provider
//! payloads, one scripted reply per connection, and records each request.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// `200 text/event-stream`, chunked, one chunk per SSE event; `cut` drops
    /// the connection after the last given chunk instead of ending the body.
    Sse { body: String, cut: bool },
    /// Any status with a JSON body and extra headers.
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A redirect.
    Redirect { code: u16, location: String },
    /// Plain text 200.
    Text(String),
    /// `200 text/event-stream` that sends `chunk` every `every`, forever
    /// (until the client goes away): a stream that never finishes.
    Endless {
        chunk: String,
        every: std::time::Duration,
    },
    /// `200 text/plain` that sends `x` in 64 KiB pieces until the client
    /// goes away: chunked, or under a `content-length` of `declared` bytes.
    Flood { declared: Option<u64> },
    /// `200 text/event-stream` that sends `first`, then nothing, holding the
    /// connection open.
    Stall { first: String },
    /// `200 text/event-stream` whose connection drops after the first `at`
    /// bytes of `body` (no end of body is sent).
    CutAt { body: String, at: usize },
}

/// A request as received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("a JSON request body")
    }
}

pub struct Replay {
    pub base_url: String,
    pub port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Replay {
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

/// A request offering one tool whose name needs a wire alias (`weather::get`).
pub fn weather_request() -> agentry_core::model::ChatRequest {
    agentry_core::model::ChatRequest {
        system: Some("You are a weather bot.".into()),
        messages: vec![agentry_core::model::Message::user(
            "Weather in Paris and Tokyo?",
        )],
        tools: vec![agentry_core::tool::ToolSchema {
            name: "weather::get".into(),
            input_schema: serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            output_schema: None,
            description: Some("Current weather for a city.".into()),
        }],
        ..Default::default()
    }
}

/// Retries with delays short enough for tests.
pub fn fast_retry() -> agentry_providers::RetryPolicy {
    agentry_providers::RetryPolicy {
        max_retries: 2,
        min_delay: std::time::Duration::from_millis(10),
        max_delay: std::time::Duration::from_secs(5),
    }
}

/// A complete SSE reply from a fixture file.
pub fn sse(name: &str) -> Reply {
    Reply::Sse {
        body: fixture(name),
        cut: false,
    }
}

pub fn fixture(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// Start a server answering with `replies` in order (then 500s).
pub async fn serve(replies: Vec<Reply>) -> Replay {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
    let recorded = requests.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let reply = queue.lock().unwrap().pop_front();
            let recorded = recorded.clone();
            tokio::spawn(async move {
                let _ = handle(stream, reply, recorded).await;
            });
        }
    });
    Replay {
        base_url: format!("http://127.0.0.1:{port}"),
        port,
        requests,
    }
}

async fn handle(
    mut stream: TcpStream,
    reply: Option<Reply>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buffer[head_end..]).to_string();
    recorded.lock().unwrap().push(Recorded {
        method,
        path,
        headers,
        body,
        at: Instant::now(),
    });

    match reply {
        Some(Reply::Sse { body, cut }) => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n")
                .await?;
            for event in body.split_inclusive("\n\n") {
                stream
                    .write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes())
                    .await?;
                stream.flush().await?;
                tokio::task::yield_now().await;
            }
            if !cut {
                stream.write_all(b"0\r\n\r\n").await?;
            }
            stream.flush().await?;
            // Dropping the stream closes the connection (mid-body when cut).
        }
        Some(Reply::Status {
            code,
            headers,
            body,
        }) => {
            let extra: String = headers
                .iter()
                .map(|(k, v)| format!("{k}: {v}\r\n"))
                .collect();
            let response = format!(
                "HTTP/1.1 {code} Status\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(response.as_bytes()).await?;
        }
        Some(Reply::Redirect { code, location }) => {
            let response = format!(
                "HTTP/1.1 {code} Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            stream.write_all(response.as_bytes()).await?;
        }
        Some(Reply::Text(text)) => {
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            stream.write_all(response.as_bytes()).await?;
        }
        Some(Reply::Endless { chunk, every }) => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                .await?;
            loop {
                stream
                    .write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes())
                    .await?;
                stream.flush().await?;
                tokio::time::sleep(every).await;
            }
        }
        Some(Reply::Flood { declared }) => {
            let framing = match declared {
                Some(length) => format!("content-length: {length}"),
                None => "transfer-encoding: chunked".to_owned(),
            };
            stream
                .write_all(
                    format!("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n{framing}\r\n\r\n")
                        .as_bytes(),
                )
                .await?;
            let piece = vec![b'x'; 64 << 10];
            loop {
                if declared.is_none() {
                    stream
                        .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                        .await?;
                }
                stream.write_all(&piece).await?;
                if declared.is_none() {
                    stream.write_all(b"\r\n").await?;
                }
            }
        }
        Some(Reply::CutAt { body, at }) => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                .await?;
            let part = &body.as_bytes()[..at];
            if !part.is_empty() {
                stream
                    .write_all(format!("{:x}\r\n", part.len()).as_bytes())
                    .await?;
                stream.write_all(part).await?;
                stream.write_all(b"\r\n").await?;
            }
            stream.flush().await?;
        }
        Some(Reply::Stall { first }) => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                .await?;
            stream
                .write_all(format!("{:x}\r\n{first}\r\n", first.len()).as_bytes())
                .await?;
            stream.flush().await?;
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        }
        None => {
            stream
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await?;
        }
    }
    stream.shutdown().await.ok();
    Ok(())
}
