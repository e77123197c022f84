//! Prometheus metrics at `GET /metrics` (OpenMetrics text, `prometheus-client`):
//! requests by route and status with their durations, turns by face and
//! outcome, turns running now, and tool calls by tool and outcome. Routes
//! are labelled by their template (`/v1/sessions/{id}/turns`), so no session
//! id or other caller data reaches a label.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::App;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TurnLabels {
    face: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    outcome: &'static str,
}

/// Which API ran a turn.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Face {
    /// `POST /v1/sessions/{id}/turns`.
    Sessions,
    /// `POST /v1/chat/completions`.
    ChatCompletions,
}

/// The server's metrics.
#[derive(Clone)]
pub(crate) struct Metrics {
    registry: Arc<Registry>,
    requests: Family<RequestLabels, Counter>,
    durations: Family<RouteLabels, Histogram>,
    turns: Family<TurnLabels, Counter>,
    running: Gauge,
    tool_calls: Family<ToolLabels, Counter>,
}

fn duration_histogram() -> Histogram {
    // 1 ms … about 33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("agentry");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route and status",
            requests.clone(),
        );
        let durations =
            Family::<RouteLabels, Histogram>::new_with_constructor(duration_histogram as fn() -> _);
        registry.register(
            "http_request_duration_seconds",
            "Time to the response's head (a stream's first byte), by route",
            durations.clone(),
        );
        let turns = Family::<TurnLabels, Counter>::default();
        registry.register("turns", "Turns run, by API face and outcome", turns.clone());
        let running = Gauge::default();
        registry.register("turns_running", "Turns running now", running.clone());
        let tool_calls = Family::<ToolLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls made by the agent, by tool and outcome",
            tool_calls.clone(),
        );
        Self {
            registry: Arc::new(registry),
            requests,
            durations,
            turns,
            running,
            tool_calls,
        }
    }

    /// A turn starts; it counts as running until the guard drops, and then
    /// as `outcome` (`"final"` unless [`TurnGuard::finish`] said otherwise).
    pub(crate) fn turn(&self, face: Face) -> TurnGuard {
        self.running.inc();
        TurnGuard {
            metrics: self.clone(),
            face,
            outcome: "cancelled",
        }
    }

    /// One tool call finished.
    pub(crate) fn tool_call(&self, tool: &str, is_error: bool) {
        let outcome = if is_error { "error" } else { "ok" };
        self.tool_calls
            .get_or_create(&ToolLabels {
                tool: tool.to_owned(),
                outcome,
            })
            .inc();
    }

    fn render(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// A running turn, counted when dropped.
pub(crate) struct TurnGuard {
    metrics: Metrics,
    face: Face,
    outcome: &'static str,
}

impl TurnGuard {
    /// How the turn ended: `"final"`, `"model_error"`, `"out_of_steps"`, …
    /// A guard dropped before this (a client that went away) counts as `"cancelled"`.
    pub(crate) fn finish(&mut self, outcome: &'static str) {
        self.outcome = outcome;
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.metrics.running.dec();
        let face = match self.face {
            Face::Sessions => "sessions",
            Face::ChatCompletions => "chat_completions",
        };
        self.metrics
            .turns
            .get_or_create(&TurnLabels {
                face,
                outcome: self.outcome,
            })
            .inc();
    }
}

/// Middleware: count and time every request by its route template.
pub(crate) async fn record(State(app): State<App>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let method = request.method().as_str().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let elapsed = started.elapsed().as_secs_f64();
    app.metrics
        .durations
        .get_or_create(&RouteLabels {
            method: method.clone(),
            route: route.clone(),
        })
        .observe(elapsed);
    app.metrics
        .requests
        .get_or_create(&RequestLabels {
            method,
            route,
            status: response.status().as_u16(),
        })
        .inc();
    response
}

/// `GET /metrics`: the metrics in the OpenMetrics text format.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "The metrics (OpenMetrics text)", body = String, content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8"),
        (status = 401, description = "No valid API key", body = crate::error::ErrorBody),
        (status = 429, description = "Over this key's rate", body = crate::error::ErrorBody),
    ),
    security(("api_key" = []))
)]
pub(crate) async fn metrics(State(app): State<App>) -> Response {
    match app.metrics.render() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => {
            crate::error::ApiError::internal("the metrics could not be written").into_response()
        }
    }
}
