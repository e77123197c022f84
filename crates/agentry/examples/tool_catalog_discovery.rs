//! Function groups and discovery: a `kb` group with its
//! `search` function, on the local model (Qwen2.5-Coder-0.5B through
//! llama.cpp). The first prompt carries only the module summary; the model
//! calls `discover({"tools": "kb"})`, and `kb.search` is callable from the
//! next step on.
//!
//! ```go
//! assistant := axllm.NewAgent("message:string -> reply:string", map[string]axllm.Value{
//!     "functionDiscovery": true,
//!     "functions": []axllm.Value{map[string]axllm.Value{
//!         "namespace": "kb",
//!         "title": "Knowledge Base",
//!         "selectionCriteria": "Use for policy or documentation lookup.",
//!         "functions": axllm.Array(search),
//!     }},
//! })
//! ```
//!
//! Run: `cargo run -p agentry --example tool_catalog_discovery` (after `agentry
//! model pull`; without the model the offline model answers).

mod support;

use std::sync::Arc;

use agentry::agent::{Agent, DISCOVER, RunOutcome};
use agentry::model::{ChatModel, ToolChoice};
use agentry::tool::ToolGroup;
use support::{local_or_offline, search};

/// The assistant: discovery on, one module.
fn assistant(model: Arc<dyn ChatModel>) -> Agent {
    let kb = ToolGroup::new("kb", "Knowledge Base")
        .selection_criteria("Use for policy or documentation lookup.")
        .tool(search());
    Agent::builder(model)
        .system("You are a support assistant. Look things up before you answer, then reply in one sentence.")
        .group(kb)
        .discovery(true)
        // A small model is told to start by choosing a module.
        .first_tool_choice(ToolChoice::Tool(DISCOVER.into()))
        .max_tool_rounds(2)
        .max_steps(4)
        .max_tokens(120)
        .build()
        .expect("valid tools")
}

async fn run(model: Arc<dyn ChatModel>) -> RunOutcome {
    let run = assistant(model)
        .run("Can this customer get a refund?")
        .await;
    support::print_calls(&run.steps);
    println!("reply: {}", run.text());
    println!("tokens: {}", run.usage.total());
    run
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    run(local_or_offline().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_discovers_kb_then_searches_it() {
    if !support::local_model_present() {
        return;
    }
    let run = run(local_or_offline().await).await;
    let first = &run.steps[0].calls[0];
    assert_eq!(first.call.name, DISCOVER);
    assert!(!first.result.is_error, "{:?}", first.result);
    assert_eq!(first.result.output["loaded"][0]["name"], "kb.search");
    let second = &run.steps[1].calls[0];
    assert_eq!(second.call.name, "kb.search");
    assert_eq!(
        second.result.output,
        serde_json::json!({"title": "Ax docs"})
    );
    assert!(!run.text().trim().is_empty());
}
