//! HTTP plumbing shared by the providers: sending with retries and backoff
//! (429, 5xx, 529 and connection failures; `retry-after` honoured), mapping
//! error responses to typed [`ModelError`]s, and reading an SSE body.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agentry_core::model::ModelError;
use backon::{ExponentialBuilder, Retryable};
use eventsource_stream::{Event, Eventsource};
use futures_util::{Stream, StreamExt};
use reqwest::{RequestBuilder, Response, StatusCode};

/// How long a model call may take, and how large what it sends may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamLimits {
    /// Longest wait for the next piece of a streamed reply (a server that
    /// stops sending without closing the connection).
    pub idle: Duration,
    /// Longest a whole step may take, retries and streaming included (a
    /// server that sends keep-alive pings forever).
    pub total: Duration,
    /// Longest line of the event stream, in bytes: more is a protocol error,
    /// not a buffer that grows without end.
    pub max_line: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(60),
            total: Duration::from_secs(600),
            max_line: 1024 * 1024,
        }
    }
}

/// How long connecting to a provider may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client providers use unless given one: connecting times out.
pub(crate) fn default_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .unwrap_or_default()
}

/// How failed requests are retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: usize,
    /// First backoff delay; it doubles each retry (with jitter).
    pub min_delay: Duration,
    /// Longest backoff delay, and longest `retry-after` honoured.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            min_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }
}

#[derive(Debug)]
enum Failure {
    Status {
        status: StatusCode,
        retry_after: Option<Duration>,
        body: String,
    },
    Transport(reqwest::Error),
}

impl std::fmt::Display for Failure {
    /// The status and the capped message, never the whole body.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Status { status, body, .. } => {
                write!(f, "HTTP {status}: {}", error_message(body))
            }
            Failure::Transport(error) => f.write_str(&error_chain(error)),
        }
    }
}

impl Failure {
    fn retryable(&self) -> bool {
        match self {
            Failure::Status { status, .. } => {
                matches!(status.as_u16(), 408 | 429 | 500 | 502 | 503 | 504 | 529)
            }
            Failure::Transport(error) => error.is_connect() || error.is_timeout(),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status { retry_after, .. } => *retry_after,
            Failure::Transport(_) => None,
        }
    }
}

/// Send a request, retrying per `policy`. `build` makes a fresh request for each attempt.
pub(crate) async fn send(
    policy: &RetryPolicy,
    build: impl Fn() -> RequestBuilder,
) -> Result<Response, ModelError> {
    let attempts = AtomicU32::new(0);
    let attempt = || async {
        attempts.fetch_add(1, Ordering::Relaxed);
        let response = build().send().await.map_err(Failure::Transport)?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let retry_after = retry_after(&response);
        let body = capped_body(response).await;
        Err(Failure::Status {
            status,
            retry_after,
            body,
        })
    };
    let backoff = ExponentialBuilder::default()
        .with_min_delay(policy.min_delay)
        .with_max_delay(policy.max_delay)
        .with_max_times(policy.max_retries)
        .with_jitter();
    let max_delay = policy.max_delay;
    let result = attempt
        .retry(backoff)
        .sleep(tokio::time::sleep)
        .when(Failure::retryable)
        .adjust(|failure, delay| {
            delay.map(|delay| {
                failure
                    .retry_after()
                    .map_or(delay, |after| after.min(max_delay))
            })
        })
        .notify(|failure, delay| tracing::warn!(?delay, error = %failure, "retrying model request"))
        .await;
    result.map_err(|failure| to_model_error(failure, attempts.load(Ordering::Relaxed)))
}

fn retry_after(response: &Response) -> Option<Duration> {
    let header = |name: &str| response.headers().get(name)?.to_str().ok();
    parse_retry_after(header("retry-after-ms"), header("retry-after"))
}

/// The wait a server asks for, from `retry-after-ms` (preferred) or
/// `retry-after` (seconds). Any number is accepted without panicking:
/// negatives are no wait, and huge or infinite ones saturate (the caller
/// clamps to its longest delay); `NaN` and text are ignored.
fn parse_retry_after(ms: Option<&str>, secs: Option<&str>) -> Option<Duration> {
    let number = |text: Option<&str>| {
        text?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|value| !value.is_nan())
    };
    let seconds = number(ms).map(|ms| ms / 1000.0).or_else(|| number(secs))?;
    if seconds <= 0.0 {
        return Some(Duration::ZERO);
    }
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

fn to_model_error(failure: Failure, attempts: u32) -> ModelError {
    match failure {
        Failure::Status {
            status,
            retry_after,
            body,
        } => {
            let message = error_message(&body);
            match status.as_u16() {
                401 | 403 => ModelError::Auth {
                    status: status.as_u16(),
                    message,
                },
                429 => ModelError::RateLimited {
                    attempts,
                    retry_after,
                    message,
                },
                code => ModelError::Http {
                    status: code,
                    message,
                },
            }
        }
        Failure::Transport(error) => ModelError::Transport(error_chain(&error)),
    }
}

/// Longest error body read from a failed response; the rest is not read.
pub const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest error message kept from a provider's error body, in characters.
const MAX_ERROR_MESSAGE: usize = 500;

/// At most [`MAX_ERROR_BODY`] bytes of a failed response's body.
async fn capped_body(mut response: Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The `error.message` of a provider's JSON error body, or the body itself,
/// cut to 500 characters either way.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|value| {
        value["error"]["message"]
            .as_str()
            .or_else(|| value["message"].as_str())
            .or_else(|| value["error"].as_str())
    });
    let text = message.unwrap_or(body);
    let count = text.chars().count();
    if count <= MAX_ERROR_MESSAGE {
        text.to_owned()
    } else {
        let head: String = text.chars().take(MAX_ERROR_MESSAGE).collect();
        format!("{head}… ({count} characters)")
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A line of the event stream over the limit.
#[derive(Debug)]
struct LineTooLong(usize);

impl std::fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "an event-stream line is longer than {} bytes", self.0)
    }
}

impl std::error::Error for LineTooLong {}

/// Why the byte stream under the event parser stopped.
#[derive(Debug)]
enum Bytes {
    Http(reqwest::Error),
    TooLong(LineTooLong),
}

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bytes::Http(error) => f.write_str(&error_chain(error)),
            Bytes::TooLong(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for Bytes {}

/// Start a model call that must end by `deadline`: send it (with retries)
/// within the time left.
pub(crate) async fn send_by(
    deadline: tokio::time::Instant,
    policy: &RetryPolicy,
    build: impl Fn() -> RequestBuilder,
) -> Result<Response, ModelError> {
    match tokio::time::timeout_at(deadline, send(policy, build)).await {
        Ok(result) => result,
        Err(_) => Err(ModelError::Timeout(
            "the model did not answer within the step's time limit".into(),
        )),
    }
}

/// The server-sent events of a streaming response, within `limits` and by
/// `deadline`. A broken connection ends the stream with
/// [`ModelError::StreamCut`], silence or a step past its deadline with
/// [`ModelError::Timeout`], an over-long line with [`ModelError::Protocol`].
pub(crate) fn sse_events(
    response: Response,
    limits: &StreamLimits,
    deadline: tokio::time::Instant,
) -> impl Stream<Item = Result<Event, ModelError>> + Send {
    let max_line = limits.max_line;
    let idle = limits.idle;
    let mut since_newline = 0usize;
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(Bytes::Http)?;
        match chunk.iter().rposition(|byte| *byte == b'\n') {
            Some(last) => since_newline = chunk.len() - last - 1,
            None => since_newline += chunk.len(),
        }
        if since_newline > max_line {
            return Err(Bytes::TooLong(LineTooLong(max_line)));
        }
        Ok(chunk)
    });
    let events = bytes.eventsource().map(|event| {
        event.map_err(|error| match error {
            eventsource_stream::EventStreamError::Transport(Bytes::TooLong(error)) => {
                ModelError::Protocol(error.to_string())
            }
            error => ModelError::StreamCut(format!(
                "the connection broke mid-stream: {}",
                error_chain(&error)
            )),
        })
    });
    futures_util::stream::unfold(
        (Box::pin(events), false),
        move |(mut events, done)| async move {
            if done {
                return None;
            }
            let wait = tokio::time::Instant::now() + idle;
            let (until, why) = if wait < deadline {
                (wait, format!("the model sent nothing for {idle:?}"))
            } else {
                (deadline, "the step went past its time limit".to_owned())
            };
            match tokio::time::timeout_at(until, events.next()).await {
                Ok(Some(event)) => {
                    let failed = event.is_err();
                    Some((event, (events, failed)))
                }
                Ok(None) => None,
                Err(_) => Some((Err(ModelError::Timeout(why)), (events, true))),
            }
        },
    )
}

/// A malformed-chunk error quoting the start of the chunk.
pub(crate) fn malformed(what: &str, data: &str, error: &serde_json::Error) -> ModelError {
    let quoted: String = data.chars().take(200).collect();
    ModelError::Protocol(format!("malformed {what} ({error}): {quoted}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_retry_after_is_read_without_panicking() {
        let wait = |ms: Option<&str>, secs: Option<&str>| parse_retry_after(ms, secs);
        assert_eq!(wait(None, Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(
            wait(Some("1500"), Some("9")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(wait(None, Some("1e20")), Some(Duration::MAX));
        assert_eq!(wait(None, Some("inf")), Some(Duration::MAX));
        assert_eq!(wait(Some("1e30"), None), Some(Duration::MAX));
        assert_eq!(wait(None, Some("-5")), Some(Duration::ZERO));
        assert_eq!(wait(None, Some("-inf")), Some(Duration::ZERO));
        assert_eq!(wait(None, Some("NaN")), None);
        assert_eq!(
            wait(Some("soon"), Some("Wed, 21 Oct 2026 07:28:00 GMT")),
            None
        );
    }

    #[test]
    fn error_messages_are_capped() {
        let long = "x".repeat(10_000);
        let message = error_message(&format!(r#"{{"error": {{"message": "{long}"}}}}"#));
        assert_eq!(
            message.chars().count(),
            500 + "… (10000 characters)".chars().count()
        );
        assert!(message.ends_with("… (10000 characters)"));
        assert_eq!(error_message("short"), "short");
    }
}
