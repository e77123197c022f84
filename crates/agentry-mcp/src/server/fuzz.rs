//! Not part of the API: the entry point of the `mcp_request` fuzz target. A
//! JSON-RPC message from a client, parsed as rmcp parses it, and handled by
//! the server's own logic (tools/list pages, `requestState` checks,
//! tools/call through dispatch),
//! without a transport.

use std::sync::LazyLock;

use agentry_core::tool::{Tool, ToolHandler, Toolbox, function};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use serde_json::{Value, json};

use super::McpServer;

static SERVER: LazyLock<McpServer> = LazyLock::new(|| {
    let add = function("add")
        .namespace("math")
        .arg::<i64>("x", "x")
        .arg::<i64>("y", "y")
        .returns_field::<i64>("sum", "sum")
        .handler(|a: Value| {
            let sum = a["x"]
                .as_i64()
                .unwrap_or(0)
                .saturating_add(a["y"].as_i64().unwrap_or(0));
            Ok::<_, String>(json!({"sum": sum}))
        })
        .build()
        .expect("a valid tool");
    let echo = function("echo")
        .arg::<String>("text", "text")
        .optional_arg::<Vec<f64>>("numbers", "numbers")
        .handler(|a: Value| Ok::<_, String>(a))
        .build()
        .expect("a valid tool");
    let raw = Tool::new(
        "raw-input",
        json!({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
            "additionalProperties": false}),
        ToolHandler::sync(|input, _| Ok(input)),
    );
    let fails = function("fails")
        .handler(|_: Value| Err::<Value, _>("always fails"))
        .build()
        .expect("a valid tool");
    let toolbox = Toolbox::for_agent([add, echo, raw, fails]).expect("valid tools");
    McpServer::new(toolbox).page_size(2)
});

/// Parse `bytes` as one client message and handle it; never panics.
pub fn handle(bytes: &[u8]) {
    let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(bytes) else {
        return;
    };
    let JsonRpcMessage::Request(request) = message else {
        return;
    };
    static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    });
    match request.request {
        ClientRequest::ListToolsRequest(list) => {
            let _ = SERVER.page(list.params.and_then(|p| p.cursor));
        }
        ClientRequest::CallToolRequest(call) => {
            // An echoed `requestState` is opened (and nearly always refused) first.
            if let Some(sealed) = call.params.request_state.as_deref() {
                let _ = SERVER.inner.state.open(sealed, &call.params);
            }
            let _ = RUNTIME.block_on(SERVER.call(call.params, None, None));
        }
        _ => {}
    }
}
