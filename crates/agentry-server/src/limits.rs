//! What each API key may do: how many requests it may have running at once
//! (one more is answered 429 at once rather than queued, so a busy key cannot
//! starve the others), and how many it may start per minute (a token bucket
//! per key from `governor`; 429 with `Retry-After` beyond).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::Principal;
use crate::error::ApiError;

/// Requests running per key, and started per minute.
#[derive(Clone)]
pub(crate) struct Limits {
    per_key: usize,
    running: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
    rate: Option<(NonZeroU32, Arc<DefaultKeyedRateLimiter<String>>)>,
}

impl Limits {
    /// `per_key` requests running at once, and `per_minute` started per minute (any when `None`).
    pub(crate) fn new(per_key: usize, per_minute: Option<u32>) -> Self {
        let rate = per_minute.and_then(NonZeroU32::new).map(|per_minute| {
            (
                per_minute,
                Arc::new(RateLimiter::keyed(Quota::per_minute(per_minute))),
            )
        });
        Self {
            per_key: per_key.max(1),
            running: Arc::default(),
            rate,
        }
    }

    /// Count one request of `principal` against its rate; 429 when it has none left.
    pub(crate) fn check_rate(&self, principal: &Principal) -> Result<(), ApiError> {
        let Some((per_minute, limiter)) = &self.rate else {
            return Ok(());
        };
        limiter.check_key(&principal.id).map_err(|not_until| {
            ApiError::rate_limited(
                per_minute.get(),
                not_until.wait_time_from(DefaultClock::default().now()),
            )
        })
    }

    /// A slot for one request of `principal`, held until dropped; 429 when
    /// all its slots are taken.
    pub(crate) fn acquire(&self, principal: &Principal) -> Result<OwnedSemaphorePermit, ApiError> {
        let semaphore = {
            let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            running
                .entry(principal.id.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_key)))
                .clone()
        };
        semaphore
            .try_acquire_owned()
            .map_err(|_| ApiError::too_busy(self.per_key))
    }
}

/// Middleware after the key check: the caller's rate.
pub(crate) async fn rate_limit(
    State(limits): State<Limits>,
    request: Request,
    next: Next,
) -> Response {
    let checked = match request.extensions().get::<Principal>() {
        Some(principal) => limits.check_rate(principal),
        None => Ok(()),
    };
    match checked {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

/// Middleware for the keyed routes of other faces (A2A, AG-UI): a request
/// holds one of its key's running slots until its response body has been
/// sent (a stream, to its end), as the built-in routes' runs do, so that a
/// busy key cannot starve the others there either.
pub(crate) async fn hold_running(
    State(limits): State<Limits>,
    request: Request,
    next: Next,
) -> Response {
    let Some(principal) = request.extensions().get::<Principal>().cloned() else {
        return next.run(request).await;
    };
    let permit = match limits.acquire(&principal) {
        Ok(permit) => permit,
        Err(error) => return error.into_response(),
    };
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    let held = futures_util::StreamExt::map(body.into_data_stream(), move |chunk| {
        let _held = &permit;
        chunk
    });
    Response::from_parts(parts, axum::body::Body::from_stream(held))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_has_its_own_rate() {
        let limits = Limits::new(1, Some(2));
        let (a, b) = (Principal { id: "a".into() }, Principal { id: "b".into() });
        assert!(limits.check_rate(&a).is_ok() && limits.check_rate(&a).is_ok());
        let refused = limits.check_rate(&a).unwrap_err();
        assert_eq!(refused.status, axum::http::StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.code, "rate_limited");
        // Two a minute: the next one is due in about 30 seconds.
        assert!(
            (29..=30).contains(&refused.retry_after_secs.unwrap()),
            "{refused:?}"
        );
        assert!(
            limits.check_rate(&b).is_ok(),
            "another key is not held back"
        );
        let unlimited = Limits::new(1, None);
        assert!((0..100).all(|_| unlimited.check_rate(&a).is_ok()));
    }

    #[test]
    fn each_key_has_its_own_slots() {
        let limits = Limits::new(2, None);
        let (a, b) = (Principal { id: "a".into() }, Principal { id: "b".into() });
        let first = limits.acquire(&a).unwrap();
        let _second = limits.acquire(&a).unwrap();
        let refused = limits.acquire(&a).unwrap_err();
        assert_eq!(refused.status, axum::http::StatusCode::TOO_MANY_REQUESTS);
        assert!(limits.acquire(&b).is_ok(), "another key is not held back");
        drop(first);
        assert!(
            limits.acquire(&a).is_ok(),
            "a finished request frees its slot"
        );
    }
}
