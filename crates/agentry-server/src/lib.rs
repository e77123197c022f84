//! # agentry-server
//!
//! An agentry agent over HTTP, on axum: memory-grounded chat sessions (chat
//! turns that recall memory and store both sides) streamed as server-sent events, an OpenAI-compatible
//! `/v1/chat/completions`, API keys that keep each caller's sessions their
//! own, per-key limits on running requests and on requests per minute, a body
//! size limit, request ids, health checks, Prometheus metrics at `/metrics`,
//! an OpenAPI document at `/openapi.json`, a web chat page at `/`, and, with
//! [`AgentServer::durable_runs`], turns that wait for a person's approval of
//! a destructive call (`/v1/runs/{id}`, `/v1/runs/{id}/approvals`).
//!
//! It answers to the loopback names only unless told others
//! ([`AgentServer::allow_hosts`]), so a web page cannot reach it by
//! rebinding a DNS name of its own to 127.0.0.1; browsers' requests from
//! other pages than its own are refused ([`AgentServer::allow_origins`]);
//! slow and idle connections are closed and their number bounded, in all and
//! per address ([`AgentServer::max_connections_per_peer`]); and an address
//! that sends wrong API keys is throttled
//! ([`AgentServer::failed_keys_per_minute`]).
//!
//! ```
//! use std::sync::Arc;
//! use agentry_agent::Agent;
//! use agentry_core::embed::KeywordEmbedder;
//! use agentry_core::memory::{InMemoryStore, Memory};
//! use agentry_core::model::{ScriptedModel, Step, Usage};
//! use agentry_server::{AgentServer, ApiKeys};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::new().reply(Step::Final { text: "Hello!".into(), tokens: Usage::new(5, 2) });
//! let agent = Agent::builder(model).build().unwrap();
//! let memory = Memory::new(InMemoryStore::new(), KeywordEmbedder::new(["hello"]));
//! let server = AgentServer::new("helper", agent, memory).api_keys(ApiKeys::from_list("s3cret"));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let address = listener.local_addr().unwrap();
//! tokio::spawn(server.serve(listener, std::future::pending()));
//!
//! // Any HTTP client: a turn of session "demo", answered as JSON.
//! let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
//! let body = r#"{"text":"hi"}"#;
//! let request = format!(
//!     "POST /v1/sessions/demo/turns HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer s3cret\r\n\
//!      Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
//!     body.len()
//! );
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! stream.write_all(request.as_bytes()).await.unwrap();
//! let mut response = String::new();
//! stream.read_to_string(&mut response).await.unwrap();
//! assert!(response.starts_with("HTTP/1.1 200"));
//! assert!(response.contains(r#""text":"Hello!""#));
//! # });
//! ```

mod auth;
mod checked;
mod connections;
mod driven;
mod error;
mod failed_keys;
mod limits;
mod metrics;
mod openai;
mod openapi;
mod page;
mod remote_runs;
mod runs;
mod sessions;
mod sites;

use std::sync::Arc;
use std::time::Duration;

use agentry_agent::Agent;
use agentry_agent::durable::RunJournal;
use agentry_agent::turn::TurnConfig;
use agentry_agent::turn::TurnRunner;
use agentry_core::memory::Memory;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request, StatusCode};
use axum::middleware;
use axum::routing::{delete, get, post};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use auth::{ApiKeys, PRINCIPAL_HEADER, Principal};
pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use openai::{ChatCompletion, ChatCompletionRequest, ChatMessage, ModelList};
pub use openapi::{ServerSentEvent, openapi};
pub use runs::{ApprovalRequest, DecisionKind, RunResponse, RunStep, WaitingCallBody};
pub use sessions::{
    AttachmentBody, MessagesResponse, RecallBody, RunWaiting, StoredMessage, ToolCallRecord,
    TurnRequest, TurnResponse,
};
pub use sites::{HostPattern, OriginPattern, PatternError};

/// Largest request body unless told otherwise: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;
/// Requests one key may have running at once unless told otherwise.
pub const DEFAULT_MAX_RUNNING_PER_KEY: usize = 8;
/// How long a request's head (line and headers) may take from its first
/// byte unless told otherwise.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may wait for a request's first byte (a new one,
/// or a kept-alive one after its last answer), or for the next piece of a
/// request's body, unless told otherwise.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a request's whole body may take to arrive, from the end of its
/// head, unless told otherwise.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections open at once unless told otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Connections open at once from one address unless told otherwise.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 128;
/// Wrong API keys one address may send a minute unless told otherwise.
pub const DEFAULT_FAILED_KEYS_PER_MINUTE: u32 = 10;

/// What every handler shares, behind one `Arc`: axum clones the state for
/// every request (and every route's handler for every connection).
pub(crate) type App = Arc<Shared>;

/// The server's state.
pub(crate) struct Shared {
    /// The agent's name: the model name of the OpenAI face.
    name: String,
    /// The agent, for chat completions.
    agent: Arc<Agent>,
    /// The chat-turn configuration (the same agent, and memory), for sessions.
    turn: TurnConfig,
    limits: limits::Limits,
    metrics: metrics::Metrics,
    /// Validators of the request bodies.
    schemas: checked::Schemas,
    /// When the server started, in Unix seconds.
    started: u64,
    /// Where durable runs are kept, when turns run durably.
    runs: Option<Arc<dyn RunJournal>>,
    /// Where agent loops run instead of here, when they are handed off.
    remote: Option<Arc<dyn TurnRunner>>,
}

/// An agent served over HTTP. Build it, then [`router`](Self::router) (to
/// mount in a larger axum app) or [`serve`](Self::serve).
pub struct AgentServer {
    name: String,
    agent: Agent,
    memory: Memory,
    keys: ApiKeys,
    max_body_bytes: usize,
    max_running_per_key: usize,
    requests_per_minute: Option<u32>,
    runs: Option<Arc<dyn RunJournal>>,
    remote: Option<Arc<dyn TurnRunner>>,
    sites: sites::Sites,
    connections: connections::ConnectionLimits,
    failed_keys_per_minute: u32,
    /// Routes of other faces (A2A, AG-UI): answered to anyone.
    public_routes: Vec<Router>,
    /// Routes of other faces behind the API keys and limits.
    keyed_routes: Vec<Router>,
}

impl std::fmt::Debug for AgentServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentServer")
            .field("name", &self.name)
            .field("keys", &self.keys)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_running_per_key", &self.max_running_per_key)
            .field("requests_per_minute", &self.requests_per_minute)
            .field("sites", &self.sites)
            .field("connections", &self.connections)
            .field("failed_keys_per_minute", &self.failed_keys_per_minute)
            .finish()
    }
}

impl AgentServer {
    /// Serve `agent`, named `name` (its model name on the OpenAI face and the
    /// source of what it stores), with session memory in `memory`. No API
    /// keys: every caller is the same local user.
    pub fn new(name: impl Into<String>, agent: Agent, memory: Memory) -> Self {
        Self {
            name: name.into(),
            agent,
            memory,
            keys: ApiKeys::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_running_per_key: DEFAULT_MAX_RUNNING_PER_KEY,
            requests_per_minute: None,
            runs: None,
            remote: None,
            sites: sites::Sites::default(),
            connections: connections::ConnectionLimits {
                header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
                idle_timeout: DEFAULT_IDLE_TIMEOUT,
                body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
                max_connections: DEFAULT_MAX_CONNECTIONS,
                max_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            },
            failed_keys_per_minute: DEFAULT_FAILED_KEYS_PER_MINUTE,
            public_routes: Vec::new(),
            keyed_routes: Vec::new(),
        }
    }

    /// Also serve `routes` (another protocol's face of the agent, such as
    /// its A2A agent card) to anyone, with the Host and Origin checks, the
    /// connection limits and request ids of the rest.
    pub fn public_routes(mut self, routes: Router) -> Self {
        self.public_routes.push(routes);
        self
    }

    /// Also serve `routes` behind the API keys and the per-key limits (a
    /// request holds one of its key's running slots until its response has
    /// been sent) and the body limit. Their handlers find the caller's [`Principal`] as a
    /// request extension, and its id in the `x-agentry-principal` header
    /// (whatever the caller sent under that name is replaced).
    pub fn keyed_routes(mut self, routes: Router) -> Self {
        self.keyed_routes.push(routes);
        self
    }

    /// Run each chat turn's agent durably in `journal` (the memory store's
    /// SQLite file or PostgreSQL database serves): a destructive call
    /// stops the turn with a `run:waiting` event instead of being refused,
    /// `GET /v1/runs/{id}` shows the run and `POST /v1/runs/{id}/approvals`
    /// decides and resumes it, in any server process sharing the journal.
    pub fn durable_runs(mut self, journal: impl RunJournal + 'static) -> Self {
        self.runs = Some(Arc::new(journal));
        self
    }

    /// Hand every agent loop (chat turns and chat completions) to `runner`
    /// instead of running it in this process: for example
    /// `agentry_temporal::TemporalTurns`, whose workers, on other machines,
    /// carry the runs out, so that HTTP servers and workers scale apart.
    /// Turns keep their memory here. A run that waits for a person stops its
    /// turn with `run:waiting`; it is decided where the runner keeps its runs
    /// (for Temporal, `agentry runs approve --temporal`), not by
    /// `/v1/runs`. Takes precedence over [`durable_runs`](Self::durable_runs).
    pub fn remote_runs(mut self, runner: Arc<dyn TurnRunner>) -> Self {
        self.remote = Some(runner);
        self
    }

    /// Require one of these keys on every route but `/healthz`, `/readyz`
    /// and `/openapi.json`.
    pub fn api_keys(mut self, keys: ApiKeys) -> Self {
        self.keys = keys;
        self
    }

    /// Largest request body, in bytes (413 beyond).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Requests one key may have running at once (429 beyond).
    pub fn max_running_per_key(mut self, requests: usize) -> Self {
        self.max_running_per_key = requests;
        self
    }

    /// Requests one key may start per minute, in a burst or spread out
    /// (429 with `Retry-After` beyond). Unlimited unless set.
    pub fn requests_per_minute(mut self, requests: u32) -> Self {
        self.requests_per_minute = Some(requests);
        self
    }

    /// Also answer to these `Host`s. A server answers to the loopback names
    /// (`localhost`, `127.0.0.1`, `[::1]`, any port) and, from
    /// [`serve`](Self::serve), the address it listens on; any other `Host`
    /// is refused (403), so a page whose name was rebound to this machine
    /// cannot call it.
    pub fn allow_hosts(mut self, hosts: impl IntoIterator<Item = HostPattern>) -> Self {
        self.sites.add_hosts(hosts);
        self
    }

    /// Also admit requests from pages of these origins. A browser's request
    /// is admitted from the server's own pages only (its `Origin` naming the
    /// `Host` it calls), others are refused (403).
    pub fn allow_origins(mut self, origins: impl IntoIterator<Item = OriginPattern>) -> Self {
        self.sites.add_origins(origins);
        self
    }

    /// How long a request's head may take from its first byte (the
    /// connection is closed beyond).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.connections.header_read_timeout = timeout;
        self
    }

    /// How long a connection may wait for a request's first byte, new or
    /// kept alive, and for each next piece of a request's body (closed
    /// beyond). Once the body is read a request is never timed out, a stream
    /// of events included.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.connections.idle_timeout = timeout;
        self
    }

    /// How long a request's whole body may take to arrive, from the end of
    /// its head (the connection is closed beyond), however steadily its
    /// pieces come.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.connections.body_read_timeout = timeout;
        self
    }

    /// Connections open at once (at least 1). Past this, one whose request
    /// is not being answered is closed to make room (first the one that has
    /// sent nothing of its next request for longest, else the one whose
    /// request, head or body, began longest ago), or, when every one is
    /// being answered, the new one waits.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.connections.max_connections = connections.max(1);
        self
    }

    /// Connections open at once from one address (at least 1; an IPv6
    /// address counted by its /64). Past this, one of that address's is
    /// closed to make room as for [`max_connections`](Self::max_connections),
    /// or, when every one is being answered, the new one is answered 429.
    pub fn max_connections_per_peer(mut self, connections: usize) -> Self {
        self.connections.max_per_peer = connections.max(1);
        self
    }

    /// Wrong API keys one address may send a minute (at least 1); beyond,
    /// its requests are answered 429 with `Retry-After`, their keys
    /// unchecked, until the minute is over.
    pub fn failed_keys_per_minute(mut self, failures: u32) -> Self {
        self.failed_keys_per_minute = failures.max(1);
        self
    }

    /// The HTTP API as an axum router. Mounted elsewhere, wrong keys are
    /// counted by address only when the requests carry
    /// `ConnectInfo<SocketAddr>` (axum's `into_make_service_with_connect_info`).
    pub fn router(self) -> Router {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let mut turn = TurnConfig::for_agent(self.name.clone(), self.agent.clone(), self.memory);
        if let Some(journal) = &self.runs {
            turn = turn.durable_runs(journal.clone());
        }
        if let Some(runner) = &self.remote {
            turn = turn.remote_runs(runner.clone());
        }
        let mut admitted = self.sites;
        admitted.keyed = !self.keys.is_empty();
        let app = Arc::new(Shared {
            name: self.name,
            agent: Arc::new(self.agent),
            turn,
            limits: limits::Limits::new(self.max_running_per_key, self.requests_per_minute),
            metrics: metrics::Metrics::new(),
            schemas: checked::Schemas::new(),
            started,
            runs: self.runs,
            remote: self.remote,
        });
        let mut private = Router::new()
            .route("/v1/sessions/{id}/turns", post(sessions::post_turn))
            .route("/v1/sessions/{id}/messages", get(sessions::get_messages))
            .route("/v1/sessions/{id}", delete(sessions::delete_session))
            .route("/v1/runs/{id}", get(runs::get_run))
            .route("/v1/runs/{id}/approvals", post(runs::post_approval))
            .route("/v1/runs/{id}/resume", post(runs::post_resume))
            .route("/v1/chat/completions", post(openai::chat_completions))
            .route("/v1/models", get(openai::list_models))
            .route("/metrics", get(metrics::metrics));
        for routes in self.keyed_routes {
            // Their own body limits (a protocol SDK's) cannot raise the server's.
            let limited = routes
                .layer(tower_http::limit::RequestBodyLimitLayer::new(
                    self.max_body_bytes,
                ))
                .layer(middleware::from_fn_with_state(
                    app.limits.clone(),
                    limits::hold_running,
                ));
            private = private.merge(limited.with_state::<App>(()));
        }
        let private = private
            .route_layer(middleware::from_fn_with_state(
                app.limits.clone(),
                limits::rate_limit,
            ))
            .route_layer(middleware::from_fn_with_state(
                auth::KeyCheck {
                    keys: self.keys,
                    failed: Some(Arc::new(failed_keys::FailedKeys::new(
                        self.failed_keys_per_minute,
                    ))),
                },
                auth::require_key,
            ));
        let request_id = HeaderName::from_static("x-request-id");
        // Written once: axum clones every route's handler for each
        // connection, so the handler holds shared bytes, not a JSON tree.
        let document = axum::body::Bytes::from(
            serde_json::to_vec(&openapi::served(
                &app.name,
                app.runs.is_some() || app.remote.is_some(),
            ))
            .unwrap_or_default(),
        );
        let routes = Router::new()
            .route("/", get(page::index))
            .route("/page/chat.js", get(page::script))
            .route("/page/chat.css", get(page::style))
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .route(
                "/openapi.json",
                get(move || async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        document,
                    )
                }),
            )
            .merge(private);
        let mut routes = routes;
        for public in self.public_routes {
            routes = routes.merge(public.with_state::<App>(()));
        }
        routes
            .route_layer(middleware::from_fn_with_state(app.clone(), metrics::record))
            .fallback(|| async { ApiError::not_found("no such route") })
            .with_state(app)
            .layer(DefaultBodyLimit::max(self.max_body_bytes))
            .layer(middleware::from_fn_with_state(
                Arc::new(admitted),
                sites::check,
            ))
            .layer(PropagateRequestIdLayer::new(request_id.clone()))
            .layer(
                TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                    let id = request
                        .headers()
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    let span = tracing::info_span!(
                        "request",
                        otel.name = %request.method(),
                        otel.kind = "server",
                        http.request.method = %request.method(),
                        url.path = %request.uri().path(),
                        method = %request.method(),
                        path = %request.uri().path(),
                        request_id = %id,
                    );
                    // A caller's trace goes on through the agent's spans.
                    agentry_telemetry::context::set_parent(&span, |name| {
                        request.headers().get(name).and_then(|v| v.to_str().ok())
                    });
                    span
                }),
            )
            .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
    }

    /// Serve on `listener` until `shutdown` completes; running requests
    /// (streams included) are finished first. The address it listens on is
    /// one more `Host` it answers to (unless it is `0.0.0.0` or `[::]`).
    pub async fn serve(
        mut self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let address = listener.local_addr()?;
        if !address.ip().is_unspecified() {
            self.sites.add_hosts([HostPattern::address(address)]);
        }
        let limits = self.connections;
        connections::serve(listener, self.router(), limits, shutdown).await
    }
}

/// The process is up.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses((status = 200, description = "The process is up", body = String, content_type = "text/plain"))
)]
async fn healthz() -> &'static str {
    "ok"
}

/// Ready when the memory store answers.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "The memory store answers", body = String, content_type = "text/plain"),
        (status = 503, description = "The memory store does not answer within 5 s", body = String, content_type = "text/plain"),
    )
)]
async fn readyz(
    axum::extract::State(app): axum::extract::State<App>,
) -> (StatusCode, &'static str) {
    let opts = agentry_core::memory::RecentOpts {
        limit: Some(1),
        ..Default::default()
    };
    let probe = app.turn.memory.store().recent("agentry/readyz", &opts);
    match tokio::time::timeout(Duration::from_secs(5), probe).await {
        Ok(Ok(_)) => (StatusCode::OK, "ready"),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the memory store does not answer",
        ),
    }
}
