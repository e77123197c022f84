//! A real HTTP/1.1 server on loopback, one scripted reply per connection,
//! that records each request.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A redirect.
    Redirect { code: u16, location: String },
    /// Plain text 200.
    Text(String),
    /// `200 text/plain` that sends `x` in 64 KiB pieces until the client
    /// goes away: chunked, or under a `content-length` of `declared` bytes.
    Flood { declared: Option<u64> },
}

/// A request as received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
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
    });

    match reply {
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
        None => {
            stream
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await?;
        }
    }
    stream.shutdown().await.ok();
    Ok(())
}
