//! The client under test for the official MCP conformance suite's client
//! leg: `conformance client --command "…/conformance_client"` appends the
//! mock server's URL and names the scenario in `MCP_CONFORMANCE_SCENARIO`.
//! It connects with `McpClient`, lists the tools as an agent would, and
//! makes the calls the scenario expects. Questions from the server
//! (elicitation) are accepted as the form's defaults, as a person pressing
//! "OK" would.

use agentry_mcp::client::{Authorizer, ClientCredentials, JwtAssertion, McpOAuth, TokenStore};
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
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let mut config = McpServerConfig::http("test", url)
        .protocol(protocol)
        .elicitor(accept_defaults);
    if scenario.starts_with("auth/") {
        config = config.oauth(oauth(scenario, &context));
    }
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
        auth if auth.starts_with("auth/") => {
            // Signed in: every tool is called (the suite's `test-tool`).
            for tool in &tools {
                let name = tool.name.trim_start_matches("test.");
                client
                    .call(name, json!({}))
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
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

/// The sign-in a scenario calls for: the suite's pre-registered client or
/// machine credentials where its context gives them, else registration (or
/// the metadata document where the server takes one) and a headless sign-in.
fn oauth(scenario: &str, context: &Value) -> McpOAuth {
    let text = |key: &str| context[key].as_str().map(str::to_owned);
    let oauth = match scenario {
        "auth/client-credentials-basic" => {
            McpOAuth::client_credentials(ClientCredentials::Secret {
                client_id: text("client_id").unwrap_or_default(),
                client_secret: text("client_secret").unwrap_or_default(),
            })
        }
        "auth/client-credentials-jwt" => {
            McpOAuth::client_credentials(ClientCredentials::PrivateKeyJwt {
                client_id: text("client_id").unwrap_or_default(),
                private_key_pem: text("private_key_pem").unwrap_or_default(),
                algorithm: text("signing_algorithm").unwrap_or_else(|| "ES256".into()),
            })
        }
        "auth/wif-jwt-bearer" => McpOAuth::client_credentials(ClientCredentials::JwtBearer {
            client_id: text("client_id"),
            assertion: JwtAssertion::Token(text("valid_jwt").unwrap_or_default()),
        }),
        "auth/pre-registration" => {
            McpOAuth::new().client(text("client_id").unwrap_or_default(), text("client_secret"))
        }
        _ => McpOAuth::new()
            .client_name("agentry conformance client")
            .client_metadata_url("https://conformance-test.local/client-metadata.json"),
    };
    oauth
        .store(TokenStore::memory())
        .authorizer(Authorizer::headless())
}
