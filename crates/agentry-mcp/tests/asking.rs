//! Served tools that ask the client (MCP elicitation): agentry's server and
//! client against each other over Streamable HTTP, in both protocol eras.
//! On a 2025-11-25 session the server sends `elicitation/create` while the
//! tool runs; on the stateless 2026-07-28 revision the tool answers
//! `input_required` and runs again with the answer (SEP-2322), its state
//! carried, signed, between rounds. Either way the client's `Elicitor` gives
//! the answer, and the model sees one tool result.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentry_core::tool::{Tool, ToolContext, ToolError, ToolHandler, Toolbox};
use agentry_mcp::server::{Caller, elicitation};
use agentry_mcp::{
    Answer, Elicitor, HttpOptions, McpClient, McpProtocol, McpServer, McpServerConfig,
};
use serde_json::{Map, Value, json};

/// `book`: asks for the number of nights (with a default), remembering the
/// city across rounds in its state; `runs` counts the handler's runs (one
/// per round).
fn toolbox(runs: Arc<AtomicUsize>) -> Toolbox {
    let book = Tool::new(
        "book",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ToolHandler::from_async(move |input: Value, ctx: ToolContext| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                let caller = Caller::of(&ctx).ok_or_else(|| ToolError::failed("no MCP client"))?;
                let city = input["city"].as_str().unwrap_or("?").to_owned();
                if caller.state().is_none() {
                    caller.set_state(json!({"city": city}));
                }
                let form = json!({"type": "object", "properties": {
                    "nights": {"type": "integer", "default": 2},
                    "breakfast": {"type": "boolean"}
                }});
                let request = elicitation(&format!("How long in {city}?"), form)
                    .map_err(ToolError::failed)?;
                let answer = caller
                    .ask("stay", request)
                    .await
                    .map_err(ToolError::failed)?;
                if answer["action"] != "accept" {
                    return Ok(json!(format!(
                        "not booked ({})",
                        answer["action"].as_str().unwrap_or("?")
                    )));
                }
                let remembered = caller.state().map(|state| state["city"].clone());
                Ok(json!({
                    "city": city,
                    "nights": answer["content"]["nights"],
                    "breakfast": answer["content"]["breakfast"],
                    "state": remembered,
                }))
            }
        }),
    );
    Toolbox::for_agent([book]).unwrap()
}

/// The server's URL and its tool's run counter.
async fn serve() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let runs = Arc::new(AtomicUsize::new(0));
    tokio::spawn(McpServer::new(toolbox(runs.clone())).serve_http(
        listener,
        HttpOptions::default(),
        std::future::pending(),
    ));
    (url, runs)
}

/// The JSON-RPC response in a body sent as JSON or as server-sent events.
fn response(body: &str) -> Value {
    let data = body
        .lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| !data.is_empty())
        .unwrap_or(body);
    serde_json::from_str(data).unwrap_or_else(|error| panic!("{error}: {body}"))
}

/// An elicitor that records each question and accepts with breakfast only
/// (the nights come from the form's default).
fn breakfast_only(asked: Arc<std::sync::Mutex<Vec<String>>>) -> Elicitor {
    Elicitor::new(move |question| {
        asked
            .lock()
            .unwrap()
            .push(format!("{}: {}", question.server, question.message));
        async { Answer::Accept(Map::from_iter([("breakfast".to_owned(), json!(true))])) }
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_asks_the_person_in_both_protocol_eras() {
    let (url, runs) = serve().await;
    for (protocol, rounds) in [(McpProtocol::Initialize, 1), (McpProtocol::Stateless, 2)] {
        runs.store(0, Ordering::SeqCst);
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let config = McpServerConfig::http("hotel", &url)
            .protocol(protocol)
            .elicitor(breakfast_only(asked.clone()));
        let client = McpClient::connect(config).await.unwrap();
        let result = client.call("book", json!({"city": "Oslo"})).await.unwrap();
        assert_eq!(result.is_error, Some(false), "{protocol:?}: {result:?}");
        let state = match protocol {
            // The state comes back, verified, only where there are rounds.
            McpProtocol::Stateless => json!("Oslo"),
            _ => Value::Null,
        };
        assert_eq!(
            result.structured_content,
            Some(json!({"city": "Oslo", "nights": 2, "breakfast": true, "state": state})),
            "{protocol:?}"
        );
        assert_eq!(
            *asked.lock().unwrap(),
            ["hotel: How long in Oslo?"],
            "{protocol:?}"
        );
        assert_eq!(
            runs.load(Ordering::SeqCst),
            rounds,
            "{protocol:?}: handler runs"
        );
        client.close().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn declining_reaches_the_tool_and_no_elicitor_means_no_capability() {
    let (url, _) = serve().await;
    let decline = Elicitor::new(|_| async { Answer::Decline });
    for protocol in [McpProtocol::Initialize, McpProtocol::Stateless] {
        let config = McpServerConfig::http("hotel", &url)
            .protocol(protocol)
            .elicitor(decline.clone());
        let client = McpClient::connect(config).await.unwrap();
        let result = client.call("book", json!({"city": "Rome"})).await.unwrap();
        assert_eq!(
            result.content[0].as_text().unwrap().text,
            "not booked (decline)",
            "{protocol:?}"
        );
        client.close().await;
    }
    // A client with no elicitor declares no elicitation capability. On a
    // session the tool's `ask` fails and the model reads why; on the
    // stateless revision the server refuses the call with MCP's
    // missing-capability error (-32021).
    let session = McpClient::connect(McpServerConfig::http("hotel", &url))
        .await
        .unwrap();
    let refused = session.call("book", json!({"city": "Rome"})).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(
        refused.content[0].as_text().unwrap().text,
        "tool \"book\" failed: the MCP client does not support elicitation, which this tool needs"
    );
    let stateless =
        McpClient::connect(McpServerConfig::http("hotel", &url).protocol(McpProtocol::Stateless))
            .await
            .unwrap();
    let error = stateless
        .call("book", json!({"city": "Rome"}))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the MCP server answered with an error: Missing required client capability"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tampered_or_foreign_request_state_is_refused() {
    let (url, _) = serve().await;
    let http = reqwest::Client::new();
    let post = async |body: Value| -> Value {
        let sent = http
            .post(&url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "book")
            .json(&body)
            .send()
            .await
            .unwrap();
        response(&sent.text().await.unwrap())
    };
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    let call = |id: u32, city: &str, state: Option<&str>| {
        let mut params = json!({"name": "book", "arguments": {"city": city}, "_meta": meta});
        if let Some(state) = state {
            params["requestState"] = json!(state);
            params["inputResponses"] =
                json!({"stay": {"action": "accept", "content": {"nights": 1}}});
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let first = post(call(1, "Oslo", None)).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(
        first["result"]["inputRequests"]["stay"]["method"],
        "elicitation/create"
    );
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();

    // The genuine state completes the call.
    let done = post(call(2, "Oslo", Some(&state))).await;
    assert_eq!(
        done["result"]["structuredContent"]["state"], "Oslo",
        "{done}"
    );
    // One changed character, or the state of another call, is refused.
    let mut tampered = state.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    for (id, city, state) in [(3, "Oslo", tampered.as_str()), (4, "Rome", state.as_str())] {
        let refused = post(call(id, city, Some(state))).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("requestState failed its integrity check"),
            "{refused}"
        );
    }
}
