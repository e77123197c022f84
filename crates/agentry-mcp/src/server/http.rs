//! Streamable HTTP for [`McpServer`]: an axum router at [`MCP_PATH`], with
//! the `Host` and `Origin` checks against DNS rebinding on (rmcp leaves
//! Origin checks off by default), an optional bearer token, and a body size
//! limit. Bind 127.0.0.1 unless the server is meant to be reached from elsewhere.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::McpServer;
use crate::McpError;

/// Where the endpoint is mounted.
pub const MCP_PATH: &str = "/mcp";

/// How the HTTP endpoint is guarded.
#[derive(Clone)]
pub struct HttpOptions {
    /// Required `Authorization: Bearer …` token, if any.
    pub bearer: Option<String>,
    /// `Host` header values accepted (a name without a port accepts any port).
    pub allowed_hosts: Vec<String>,
    /// `Origin` header values accepted (with a scheme; `:*` for any port).
    /// Requests without an `Origin` (not from a browser) pass.
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish()
    }
}

impl Default for HttpOptions {
    /// Local use: loopback hosts and origins only, no token, 4 MiB bodies.
    fn default() -> Self {
        Self {
            bearer: None,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
            ],
            max_body_bytes: 4 << 20,
        }
    }
}

impl HttpOptions {
    /// Require `Authorization: Bearer token`.
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }
}

impl McpServer {
    /// The MCP endpoint as an axum router (mounted at [`MCP_PATH`]), stopping
    /// its streams when `shutdown` is cancelled.
    pub fn router(self, options: HttpOptions, shutdown: CancellationToken) -> Router {
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(options.allowed_hosts.clone())
            .with_allowed_origins(options.allowed_origins.clone())
            .enforce_origin_validation()
            .with_max_request_body_bytes(options.max_body_bytes)
            .with_sse_keep_alive(Some(Duration::from_secs(15)))
            .with_cancellation_token(shutdown);
        let server = self.clone();
        let service: StreamableHttpService<McpServer, LocalSessionManager> =
            StreamableHttpService::new(
                move || Ok(server.for_session()),
                Arc::new(LocalSessionManager::default()),
                config,
            );
        let router = Router::new().nest_service(MCP_PATH, service);
        match options.bearer {
            Some(token) => router.layer(middleware::from_fn(move |request, next| {
                let token = token.clone();
                async move { check_bearer(&token, request, next).await }
            })),
            None => router,
        }
    }

    /// Serve over HTTP on `listener` until `shutdown` completes.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), McpError> {
        let token = CancellationToken::new();
        let router = self.router(options, token.clone());
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                token.cancel();
            })
            .await
            .map_err(|error| McpError::Serve(error.to_string()))
    }
}

/// 401 with `WWW-Authenticate: Bearer` unless the request carries the token.
async fn check_bearer(token: &str, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    match given {
        Some(given) if same(given.as_bytes(), token.as_bytes()) => next.run(request).await,
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "a bearer token is required",
        )
            .into_response(),
    }
}

/// Equal, comparing every byte whatever the first difference (no timing hint).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
