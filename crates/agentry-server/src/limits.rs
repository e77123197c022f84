//! How many requests each API key may have running at once: one more is
//! answered 429 at once rather than queued, so a busy key cannot starve
//! the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::Principal;
use crate::error::ApiError;

/// Requests running per key.
#[derive(Clone)]
pub(crate) struct Limits {
    per_key: usize,
    running: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
}

impl Limits {
    pub(crate) fn new(per_key: usize) -> Self {
        Self {
            per_key: per_key.max(1),
            running: Arc::default(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_has_its_own_slots() {
        let limits = Limits::new(2);
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
