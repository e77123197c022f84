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
        let body = response.text().await.unwrap_or_default();
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
        .notify(|failure, delay| tracing::warn!(?delay, error = ?failure, "retrying model request"))
        .await;
    result.map_err(|failure| to_model_error(failure, attempts.load(Ordering::Relaxed)))
}

fn retry_after(response: &Response) -> Option<Duration> {
    let header = |name: &str| {
        response
            .headers()
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
    };
    if let Some(ms) = header("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    header("retry-after").map(|secs| Duration::from_secs_f64(secs.max(0.0)))
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

/// The `error.message` of a provider's JSON error body, or the body itself (cut to 500 characters).
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|value| {
        value["error"]["message"]
            .as_str()
            .or_else(|| value["message"].as_str())
            .or_else(|| value["error"].as_str())
    });
    match message {
        Some(message) => message.to_owned(),
        None => body.chars().take(500).collect(),
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

/// The server-sent events of a streaming response. A broken connection ends
/// the stream with [`ModelError::StreamCut`].
pub(crate) fn sse_events(
    response: Response,
) -> impl Stream<Item = Result<Event, ModelError>> + Send {
    response.bytes_stream().eventsource().map(|event| {
        event.map_err(|error| {
            ModelError::StreamCut(format!(
                "the connection broke mid-stream: {}",
                error_chain(&error)
            ))
        })
    })
}

/// A malformed-chunk error quoting the start of the chunk.
pub(crate) fn malformed(what: &str, data: &str, error: &serde_json::Error) -> ModelError {
    let quoted: String = data.chars().take(200).collect();
    ModelError::Protocol(format!("malformed {what} ({error}): {quoted}"))
}
