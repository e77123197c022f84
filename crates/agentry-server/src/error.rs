//! API errors: a status and a JSON body in the shape OpenAI clients read,
//! `{"error": {"message", "type", "code"}}`, so every failure says what to fix.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// A failed request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable machine-readable code (`unauthorized`, `not_found`, …).
    pub code: &'static str,
    /// What went wrong, for a person.
    pub message: String,
    /// When to try again, in seconds (sent as `Retry-After`).
    pub retry_after_secs: Option<u64>,
}

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// One error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// What went wrong.
    pub message: String,
    /// The kind of error (`invalid_request_error`, `authentication_error`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// A stable code.
    pub code: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after_secs: None,
        }
    }

    /// 400: the request cannot be understood.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 401: no valid API key.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid API key is required: send `Authorization: Bearer <key>`",
        )
    }

    /// 403: this caller may not call at all (a `Host` or page origin the
    /// server does not answer to, a page of another site changing something).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404: nothing here for this key.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409: the request conflicts with what is there (a call that no longer
    /// waits, a run another process is running).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 415: a body of the wrong content type.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            message,
        )
    }

    /// 422: JSON of the wrong shape.
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", message)
    }

    /// 429: too many turns at once for this key.
    pub fn too_busy(limit: usize) -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            format!("this key already has {limit} requests running; wait for one to finish"),
        )
    }

    /// 429: this key started its `per_minute` requests in the last minute;
    /// the next may start in `wait`.
    pub fn rate_limited(per_minute: u32, wait: std::time::Duration) -> Self {
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        Self {
            retry_after_secs: Some(seconds),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!(
                    "this key may start {per_minute} requests a minute; try again in {seconds} s"
                ),
            )
        }
    }

    /// 429: `failures` wrong API keys came from this caller's address in
    /// the last minute; no key of theirs is checked for `wait`.
    pub fn too_many_failed_keys(failures: u32, wait: std::time::Duration) -> Self {
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        Self {
            retry_after_secs: Some(seconds),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_failed_keys",
                format!(
                    "{failures} wrong API keys came from your address within a minute; \
                     no key is checked from it for {seconds} s"
                ),
            )
        }
    }

    /// 429: this address already has `limit` connections open, each with a
    /// request in flight.
    pub fn too_many_connections(limit: usize) -> Self {
        Self {
            retry_after_secs: Some(1),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_connections",
                format!(
                    "your address already has {limit} connections open, each with a request \
                     running; wait for one to finish"
                ),
            )
        }
    }

    /// 500: the server failed (a store error); nothing the client can fix.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", message)
    }

    fn kind(&self) -> &'static str {
        match self.status {
            StatusCode::UNAUTHORIZED => "authentication_error",
            StatusCode::FORBIDDEN => "permission_error",
            StatusCode::NOT_FOUND => "not_found_error",
            StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
            status if status.is_server_error() => "server_error",
            _ => "invalid_request_error",
        }
    }

    /// The JSON body of this error.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                message: self.message.clone(),
                kind: self.kind().to_owned(),
                code: self.code.to_owned(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after_secs {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// A memory store failure: a 500 that names the store, never the client's fault.
impl From<agentry_core::memory::MemoryError> for ApiError {
    fn from(error: agentry_core::memory::MemoryError) -> Self {
        Self::internal(format!("the memory store failed: {error}"))
    }
}

/// A JSON body that did not parse, as an [`ApiError`] naming the problem.
impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::JsonRejection) -> Self {
        use axum::extract::rejection::JsonRejection as R;
        let message = rejection.body_text();
        match rejection {
            R::MissingJsonContentType(_) => Self::unsupported_media_type(
                "send the body as JSON with `Content-Type: application/json`",
            ),
            R::BytesRejection(_) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
            }
            _ => Self::new(rejection.status(), "invalid_json", message),
        }
    }
}
