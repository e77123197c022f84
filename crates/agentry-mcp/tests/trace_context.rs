//! An MCP call carries the caller's trace in `_meta` (`traceparent`), and
//! agentry's server parents its `tools/call` span on it: the tool on the
//! far side of Streamable HTTP runs in the caller's trace.

use std::sync::Mutex;

use agentry_core::tool::{Toolbox, function};
use agentry_mcp::{HttpOptions, McpClient, McpServer, McpServerConfig};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::{Value, json};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// The trace context the tool saw, as it would send it on.
static SEEN: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn traceparent(fields: &[(String, String)]) -> String {
    fields
        .iter()
        .find(|(name, _)| name == "traceparent")
        .map(|(_, value)| value.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_called_over_mcp_runs_in_the_callers_trace() {
    let provider = SdkTracerProvider::builder().build();
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test"))),
    )
    .unwrap();
    let probe = function("probe")
        .handler(|_: Value| {
            *SEEN.lock().unwrap() = agentry_telemetry::context::current_fields();
            Ok::<_, String>("seen")
        })
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let server = McpServer::new(Toolbox::for_agent(vec![probe]).unwrap());
    tokio::spawn(server.serve_http(listener, HttpOptions::default(), std::future::pending()));
    let client = McpClient::connect(McpServerConfig::http("far", &url))
        .await
        .unwrap();

    let span = tracing::info_span!("execute_tool");
    let caller = traceparent(&span.in_scope(agentry_telemetry::context::current_fields));
    let result = client
        .call("utils.probe", json!({}))
        .instrument(span)
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let seen = traceparent(&SEEN.lock().unwrap());
    // 00-TRACE-SPAN-01: the same trace, a span of the server's own.
    let (caller_trace, seen_trace) = (&caller[3..35], seen.get(3..35).unwrap_or_default());
    assert_eq!(seen_trace, caller_trace, "caller {caller}, tool {seen}");
    assert_ne!(seen, caller);

    // A call from no traced span starts no trace on the far side.
    client.call("utils.probe", json!({})).await.unwrap();
    let seen = traceparent(&SEEN.lock().unwrap());
    assert!(!seen.contains(caller_trace), "{seen}");
    client.close().await;
}
