//! agentry's MCP server and client against each other, in process, over
//! Streamable HTTP: pagination, structured results, validation errors,
//! progress, cancellation, the bearer token, the Host and Origin checks, the
//! body limit, and 405 for GET and DELETE in the stateless revision.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use agentry_core::tool::{Tool, ToolContext, ToolHandler, Toolbox, function};
use agentry_mcp::{HttpOptions, McpClient, McpProtocol, McpServer, McpServerConfig};
use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

static CANCELLED: AtomicBool = AtomicBool::new(false);

/// Sets [`CANCELLED`] when the call's future is dropped before finishing.
struct DropFlag(bool);
impl Drop for DropFlag {
    fn drop(&mut self) {
        if !self.0 {
            CANCELLED.store(true, Ordering::SeqCst);
        }
    }
}

fn toolbox() -> Toolbox {
    let add = function("add")
        .namespace("math")
        .description("Add two integers.")
        .arg::<i64>("x", "First")
        .arg::<i64>("y", "Second")
        .returns_field::<i64>("sum", "The sum")
        .handler(|args: Value| {
            let sum = args["x"].as_i64().unwrap_or(0) + args["y"].as_i64().unwrap_or(0);
            Ok::<_, String>(json!({"sum": sum}))
        })
        .build()
        .unwrap();
    let slow = Tool::new(
        "work.slow",
        json!({"type": "object", "properties": {"steps": {"type": "integer"}}}),
        ToolHandler::from_async(|input: Value, ctx: ToolContext| async move {
            let steps = input["steps"].as_u64().unwrap_or(3);
            let mut flag = DropFlag(false);
            for step in 1..=steps {
                tokio::time::sleep(Duration::from_millis(100)).await;
                ctx.report_progress(step as f64, Some(steps as f64), format!("step {step}"));
            }
            flag.0 = true;
            Ok(json!("done"))
        }),
    );
    let mut tools = vec![add, slow];
    // Enough tools for three pages of 100.
    tools.extend((0..230).map(|i| {
        function(format!("t{i:03}"))
            .namespace("many")
            .handler(move |_: Value| Ok::<_, String>(i))
            .build()
            .unwrap()
    }));
    Toolbox::for_agent(tools).unwrap()
}

async fn serve(options: HttpOptions) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = McpServer::new(toolbox()).page_size(100);
    tokio::spawn(server.serve_http(listener, options, async move {
        let _ = stopped.await;
    }));
    (url, stop)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_page_every_tool_and_every_kind_of_result() {
    let (url, _stop) = serve(HttpOptions::default().bearer("s3cret")).await;
    let client = McpClient::connect(McpServerConfig::http("agentry", &url).bearer("s3cret"))
        .await
        .unwrap();
    let tools = client.tools().await.unwrap();
    assert_eq!(tools.len(), 232, "three pages of tools/list");
    assert_eq!(tools[0].name, "agentry.math.add");
    assert_eq!(tools[231].name, "agentry.many.t229", "the toolbox's order");
    let toolbox = Toolbox::for_agent(tools).unwrap();
    let call = |name: &str, input: Value| {
        toolbox.dispatch(agentry_core::tool::ToolCall::new("1", name, input))
    };
    let sum = call("agentry.math.add", json!({"x": 2, "y": 40})).await;
    assert_eq!((sum.is_error, sum.output), (false, json!({"sum": 42})));
    // The client checks arguments against the server's schema first…
    let bad = call("agentry.math.add", json!({"x": "two", "y": 1})).await;
    assert_eq!(
        bad.output,
        json!(
            "invalid input for tool \"agentry.math.add\":\n- /x: \"two\" is not of type \"integer\""
        )
    );
    // …and the server checks them again: an `isError` result, not a protocol error.
    let raw = client.call("math.add", json!({"x": "two"})).await.unwrap();
    assert_eq!(raw.is_error, Some(true));
    assert_eq!(
        raw.content[0].as_text().unwrap().text,
        "invalid input for tool \"math.add\":\n- (root): \"y\" is a required property\n- /x: \"two\" is not of type \"integer\""
    );
    let many = call("agentry.many.t117", json!({})).await;
    assert_eq!(many.output, json!("117"));
    let unknown = client.call("nope", json!({})).await.unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "the MCP server answered with an error: unknown tool: nope"
    );
}

#[derive(Clone, Default)]
struct Progress(Arc<AtomicUsize>);
impl ClientHandler for Progress {
    async fn on_progress(&self, _: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_reaches_the_client_and_a_cancelled_call_stops() {
    let (url, _stop) = serve(HttpOptions::default()).await;
    // A plain rmcp client, counting progress notifications.
    let progress = Progress::default();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
    let peer = progress.clone().serve(transport).await.unwrap();
    let arguments = json!({"steps": 3}).as_object().unwrap().clone();
    let result = peer
        .call_tool(CallToolRequestParams::new("work.slow").with_arguments(arguments))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text().unwrap().text, "done");
    // rmcp hands each notification to the handler on its own task, so the
    // result can be read before the last one is counted: wait for them
    // (a loaded machine showed 2 of 3 at once), then check there are exactly 3.
    for _ in 0..50 {
        if progress.0.load(Ordering::SeqCst) >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        progress.0.load(Ordering::SeqCst),
        3,
        "one notification per report"
    );

    // Our client gives up after 1 s: the server's call is dropped, not left running.
    let client = McpClient::connect(
        McpServerConfig::http("agentry", &url).call_timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let error = client
        .call("work.slow", json!({"steps": 100}))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("did not answer within 1s"),
        "{error}"
    );
    for _ in 0..50 {
        if CANCELLED.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        CANCELLED.load(Ordering::SeqCst),
        "the server stopped the cancelled call"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_endpoint_refuses_missing_tokens_foreign_hosts_and_origins() {
    let (url, _stop) = serve(HttpOptions::default().bearer("s3cret")).await;
    let error = McpClient::connect(McpServerConfig::http("agentry", &url))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("401") || error.to_string().to_lowercase().contains("auth"),
        "{error}"
    );
    let wrong = McpClient::connect(McpServerConfig::http("agentry", &url).bearer("guess")).await;
    assert!(wrong.is_err());

    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    });
    let http = reqwest::Client::new();
    let post = |headers: &[(&str, &str)]| {
        let mut request = http
            .post(&url)
            .bearer_auth("s3cret")
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send()
    };
    assert_eq!(post(&[]).await.unwrap().status(), 200);
    // DNS rebinding: a page on evil.example resolving to 127.0.0.1.
    assert_eq!(
        post(&[("host", "evil.example")]).await.unwrap().status(),
        403
    );
    assert_eq!(
        post(&[("origin", "http://evil.example")])
            .await
            .unwrap()
            .status(),
        403
    );
    assert_eq!(
        post(&[("origin", "http://localhost:3000")])
            .await
            .unwrap()
            .status(),
        200
    );
    // The stateless 2026-07-28 revision has no GET stream and no session to delete.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = http
            .request(method.clone(), &url)
            .bearer_auth("s3cret")
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method}");
    }
    // Bodies over the limit are refused before they are read.
    let huge = "x".repeat(5 << 20);
    let response = http
        .post(&url)
        .bearer_auth("s3cret")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
}

#[tokio::test(flavor = "multi_thread")]
async fn both_protocol_eras_reach_the_same_tools() {
    let (url, _stop) = serve(HttpOptions::default()).await;
    for protocol in [
        McpProtocol::Initialize,
        McpProtocol::Stateless,
        McpProtocol::Auto,
    ] {
        let config = McpServerConfig::http("agentry", &url).protocol(protocol);
        let client = McpClient::connect(config).await.unwrap();
        assert_eq!(client.tools().await.unwrap().len(), 232, "{protocol:?}");
        let sum = client
            .call("math.add", json!({"x": 1, "y": 2}))
            .await
            .unwrap();
        assert_eq!(
            sum.structured_content,
            Some(json!({"sum": 3})),
            "{protocol:?}"
        );
    }
}
