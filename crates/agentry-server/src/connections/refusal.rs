//! Connections an address has no room for, answered 429: at most
//! [`MAX_REFUSING`] at once, each for at most a second, so that a flood of
//! them cannot hold the server's file descriptors; past that they are
//! closed at once, without an answer.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// Refusals in progress at once.
pub(super) const MAX_REFUSING: usize = 64;

/// How long a refusal waits for the request's head, then for the client
/// to close after the answer.
const REFUSAL_WAIT: Duration = Duration::from_millis(500);

/// The refusals in progress.
#[derive(Debug, Clone)]
pub(super) struct Refusals(Arc<Semaphore>);

impl Default for Refusals {
    fn default() -> Self {
        Self(Arc::new(Semaphore::new(MAX_REFUSING)))
    }
}

impl Refusals {
    /// A slot for refusing one more connection, or `None` when
    /// [`MAX_REFUSING`] are in progress (then close it at once).
    pub(super) fn slot(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().try_acquire_owned().ok()
    }
}

/// Answer a connection its address has no room for, holding `slot` until
/// its socket is closed.
pub(super) async fn refuse(mut stream: TcpStream, limit: usize, slot: OwnedSemaphorePermit) {
    answer(&mut stream, limit).await;
    drop(stream);
    drop(slot);
}

/// 429, after reading what its request sent (closing on unread bytes would
/// reset the connection and lose the answer).
async fn answer(stream: &mut TcpStream, limit: usize) {
    let error = ApiError::too_many_connections(limit);
    let body = serde_json::to_string(&error.body()).unwrap_or_default();
    let answer = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut buffer = [0u8; 4096];
    let mut head = Vec::new();
    let read_head = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buffer[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(REFUSAL_WAIT, read_head).await;
    if stream.write_all(answer.as_bytes()).await.is_err() {
        return;
    }
    let _ = stream.shutdown().await;
    let drain = async { while matches!(stream.read(&mut buffer).await, Ok(n) if n > 0) {} };
    let _ = tokio::time::timeout(REFUSAL_WAIT, drain).await;
}
