//! API keys: `Authorization: Bearer <key>` names the caller, and everything
//! a caller stores is kept under its key's id, so one key never sees
//! another's sessions. With no keys configured every request is the same
//! local user (the CLI then binds loopback only).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::failed_keys::FailedKeys;

/// The header keyed routes find the caller's [`Principal`] id in.
pub const PRINCIPAL_HEADER: &str = "x-agentry-principal";

/// Who is calling: the id of their key (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    /// A short stable id derived from the key (or `local` without keys).
    pub id: String,
}

/// The accepted keys, by their SHA-256, so the keys themselves are not kept
/// in memory longer than it takes to hash them.
#[derive(Clone, Default)]
pub struct ApiKeys {
    by_hash: Arc<HashMap<[u8; 32], Principal>>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeys")
            .field("count", &self.by_hash.len())
            .finish()
    }
}

impl ApiKeys {
    /// These keys (empty ones are ignored).
    pub fn new<I, S>(keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let by_hash = keys
            .into_iter()
            .filter(|key| !key.as_ref().trim().is_empty())
            .map(|key| {
                let hash: [u8; 32] = Sha256::digest(key.as_ref().trim().as_bytes()).into();
                let id = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
                (hash, Principal { id })
            })
            .collect();
        Self {
            by_hash: Arc::new(by_hash),
        }
    }

    /// Keys from a comma-separated list (`AGENTRY_API_KEYS`).
    pub fn from_list(list: &str) -> Self {
        Self::new(list.split(','))
    }

    /// True when no key is configured (anyone who can connect may call).
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    /// The principal of `key`, if it is one of ours.
    pub fn check(&self, key: &str) -> Option<&Principal> {
        let hash: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        self.by_hash.get(&hash)
    }
}

/// The keys, and the wrong keys counted by address (when the address is
/// known: [`AgentServer::serve`](crate::AgentServer::serve) and axum's
/// `into_make_service_with_connect_info` tell it).
#[derive(Clone)]
pub(crate) struct KeyCheck {
    pub(crate) keys: ApiKeys,
    pub(crate) failed: Option<Arc<FailedKeys>>,
}

/// Middleware: find the caller's key, or answer 401 (429 to an address
/// that sent too many wrong keys). The principal goes into the request's
/// extensions for the handlers.
pub(crate) async fn require_key(
    State(check): State<KeyCheck>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = if check.keys.is_empty() {
        Principal { id: "local".into() }
    } else {
        let peer = request
            .extensions()
            .get::<ConnectInfo<std::net::SocketAddr>>()
            .map(|ConnectInfo(address)| address.ip());
        let failed = check.failed.as_deref().zip(peer);
        if let Some((failed, peer)) = failed
            && let Some(wait) = failed.throttled(peer)
        {
            return ApiError::too_many_failed_keys(failed.limit(), wait).into_response();
        }
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer);
        match given.map(|key| check.keys.check(key)) {
            Some(Some(principal)) => principal.clone(),
            Some(None) => {
                if let Some((failed, peer)) = failed {
                    failed.record(peer);
                }
                return ApiError::unauthorized().into_response();
            }
            None => return ApiError::unauthorized().into_response(),
        }
    };
    // Faces mounted with `keyed_routes` that read only headers (a protocol
    // SDK's handlers) learn the caller from this one; a caller's own copy
    // never gets through.
    match axum::http::HeaderValue::try_from(principal.id.as_str()) {
        Ok(id) => {
            request.headers_mut().insert(PRINCIPAL_HEADER, id);
        }
        Err(_) => {
            request.headers_mut().remove(PRINCIPAL_HEADER);
        }
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// The key of an `Authorization: Bearer <key>` value, the scheme in any
/// case (RFC 7235).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, key) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_known_by_their_hash_and_get_distinct_ids() {
        let keys = ApiKeys::from_list("alpha, beta,,");
        assert!(!keys.is_empty());
        let alpha = keys.check("alpha").unwrap().clone();
        let beta = keys.check("beta").unwrap().clone();
        assert_ne!(alpha, beta);
        assert_eq!(alpha.id.len(), 16);
        assert!(keys.check("gamma").is_none() && keys.check("").is_none());
        assert!(ApiKeys::from_list(" , ").is_empty());
        assert_eq!(format!("{keys:?}"), "ApiKeys { count: 2 }");
    }
}
