//! The client under test for the official MCP conformance suite's client
//! leg: `conformance client --command "…/conformance_client"` appends the
//! mock server's URL and names the scenario in `MCP_CONFORMANCE_SCENARIO`.
//! It connects with `McpClient`, lists the tools as an agent would, and
//! makes the calls the scenario expects. Questions from the server
//! (elicitation) are accepted as the form's defaults, as a person pressing
//! "OK" would.

use agentry_mcp::{Answer, Elicitor, McpClient, McpProtocol, McpServerConfig};
use serde_json::{Map, Value, json};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let url = std::env::args().next_back().unwrap_or_default();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&url, &scenario).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{scenario}: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, scenario: &str) -> Result<(), String> {
    let protocol = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
        Ok("2026-07-28") => McpProtocol::Stateless,
        _ => McpProtocol::Initialize,
    };
    let accept_defaults = Elicitor::new(|_| async { Answer::Accept(Map::new()) });
    let config = McpServerConfig::http("test", url)
        .protocol(protocol)
        .elicitor(accept_defaults);
    let client = McpClient::connect(config)
        .await
        .map_err(|e| e.to_string())?;
    let tools = client.tools().await.map_err(|e| e.to_string())?;
    let first = |name: &str| {
        tools
            .iter()
            .find(|tool| tool.name == format!("test.{name}"))
    };
    match scenario {
        "tools_call" => {
            let tool = tools.first().ok_or("no tools")?;
            let name = tool.name.trim_start_matches("test.");
            client
                .call(name, json!({"a": 2, "b": 3}))
                .await
                .map_err(|e| e.to_string())?;
        }
        "json-schema-2020-12-preservation" => {
            let schema: Value = first("json_schema_2020_12_tool")
                .map(|tool| tool.input_schema.clone())
                .ok_or("no json_schema_2020_12_tool")?;
            client
                .call("json_schema_echo", json!({"schema": schema}))
                .await
                .map_err(|e| e.to_string())?;
        }
        "elicitation-sep1034-client-defaults" => {
            client
                .call("test_client_elicitation_defaults", json!({}))
                .await
                .map_err(|e| e.to_string())?;
        }
        "http-invalid-tool-headers" => {
            // Tools with malformed x-mcp-header annotations never reach the
            // list (SEP-2243); every tool that does is called.
            for tool in &tools {
                let name = tool.name.trim_start_matches("test.");
                client
                    .call(name, json!({"region": "us-west1"}))
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        "sep-2322-client-request-state" => {
            // Two multi-round calls, an unrelated one between them, and one
            // whose result names no resultType (complete by default).
            for name in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                client
                    .call(name, json!({}))
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        _ => {
            // Scenarios that name their calls in MCP_CONFORMANCE_CONTEXT
            // (`{"toolCalls": [{"name": …, "arguments": …}]}`) get them made.
            let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok())
                .unwrap_or_default();
            for call in context["toolCalls"].as_array().into_iter().flatten() {
                let name = call["name"].as_str().unwrap_or_default();
                client
                    .call(name, call["arguments"].clone())
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    client.close().await;
    Ok(())
}
