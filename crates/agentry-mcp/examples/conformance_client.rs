//! The client under test for the official MCP conformance suite's client
//! leg: `conformance client --command "…/conformance_client"` appends the
//! mock server's URL and names the scenario in `MCP_CONFORMANCE_SCENARIO`.
//! It connects with `McpClient`, lists the tools as an agent would, and
//! makes the call the scenario expects.

use agentry_mcp::{McpClient, McpProtocol, McpServerConfig};
use serde_json::{Value, json};

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
    let config = McpServerConfig::http("test", url).protocol(protocol);
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
        _ => {}
    }
    client.close().await;
    Ok(())
}
