//! The fixture server for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`): agentry tools with the names and
//! behaviour its tools scenarios call for, and the prompts, resources and
//! completions its other scenarios read, served by `McpServer` over
//! Streamable HTTP on `127.0.0.1:PORT` (`--port`, 3001 by default).
//!
//! `cargo run -p agentry-mcp --example conformance_server -- --port 3001`

mod asking;
mod offers;

use std::time::Duration;

use agentry_core::tool::{Tool, ToolContext, ToolHandler, Toolbox, function};
use agentry_mcp::server::content;
use agentry_mcp::{HttpOptions, McpServer};
use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::{Value, json};

pub(crate) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

fn no_args(name: &str, description: &str, output: fn() -> Result<Value, String>) -> Tool {
    function(name)
        .description(description)
        .handler(move |_: Value| output())
        .build()
        .expect("a valid tool")
        .with_name(name)
}

fn toolbox() -> Toolbox {
    let progress = Tool::new(
        "test_tool_with_progress",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(|_: Value, ctx: ToolContext| async move {
            for step in [0.0, 50.0, 100.0] {
                ctx.report_progress(step, Some(100.0), format!("{step}% done"));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(json!("Progress test completed."))
        }),
    )
    .with_description("Reports progress three times, then answers.");
    // The full JSON Schema 2020-12 vocabulary, published as written.
    let schema_2020_12 = Tool::new(
        "json_schema_2020_12_tool",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        }),
        ToolHandler::sync(|input, _| Ok(json!(format!("JSON Schema 2020-12 tool called with: {input}")))),
    )
    .with_description("Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)");
    let mut schema_2020_12 = schema_2020_12;
    schema_2020_12.pass_input = true;
    // SEP-2243: `region` travels in an `Mcp-Param-Region` header as well.
    let mut region = Tool::new(
        "test_param_header",
        json!({"type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]}),
        ToolHandler::sync(|input, _| Ok(json!(format!("region {}", input["region"])))),
    )
    .with_description("Echoes a region sent as an Mcp-Param header too.");
    region.pass_input = true;
    let basic = [
        no_args(
            "test_simple_text",
            "Returns a simple text response.",
            || Ok(json!("This is a simple text response for testing.")),
        ),
        no_args("test_image_content", "Returns an image.", || {
            Ok(content(vec![ContentBlock::image(PNG, "image/png")]))
        }),
        no_args("test_audio_content", "Returns audio.", || {
            Ok(content(vec![ContentBlock::audio(WAV, "audio/wav")]))
        }),
        no_args(
            "test_embedded_resource",
            "Returns an embedded resource.",
            || {
                let resource = ResourceContents::text(
                    "This is an embedded resource content.",
                    "test://embedded-resource",
                );
                Ok(content(vec![ContentBlock::resource(resource)]))
            },
        ),
        no_args(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
            || {
                let resource = ResourceContents::text(
                    r#"{"test":"data","value":123}"#,
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json");
                Ok(content(vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(PNG, "image/png"),
                    ContentBlock::resource(resource),
                ]))
            },
        ),
        no_args("test_error_handling", "Always fails.", || {
            Err("This tool intentionally returns an error for testing".into())
        }),
        progress,
        schema_2020_12,
        region,
    ];
    Toolbox::for_agent(basic.into_iter().chain(asking::tools())).expect("valid tools")
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port = args
        .iter()
        .position(|arg| arg == "--port")
        .and_then(|i| args.get(i + 1))
        .and_then(|port| port.parse::<u16>().ok())
        .unwrap_or(3001);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("the port is free");
    eprintln!("conformance fixture on http://localhost:{port}/mcp");
    offers::offered(McpServer::new(toolbox()))
        .named("agentry-conformance", env!("CARGO_PKG_VERSION"))
        .serve_http(listener, HttpOptions::default(), async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .expect("serving");
}
