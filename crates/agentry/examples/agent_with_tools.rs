//! Tools with an agent: an assistant whose callables are a `search`
//! function and a child agent, answered by the local model
//! (Qwen2.5-Coder-0.5B through llama.cpp) and read as a stream of events.
//!
//! ```go
//! assistant := axllm.NewAgent("message:string -> reply:string", map[string]axllm.Value{
//!     "functions":     axllm.Array(search),
//!     "contextFields": []axllm.Value{},
//! })
//! ```
//!
//! The signature `message:string -> reply:string` is `agent.prompt(message)
//! -> reply`; "child agents ... as callables" is `Agent::as_tool`. The child
//! runs its own bounded loop inside the parent's tool call: its tokens count
//! against the parent's budget and its steps appear in the parent's record.
//!
//! Run: `cargo run -p agentry --example agent_with_tools` (after `agentry
//! model pull`; without the model the offline model answers).

mod support;

use std::sync::Arc;

use agentry::agent::{Agent, AgentEvent, RunOutcome, StepRecord};
use agentry::model::{ChatModel, ToolChoice};
use futures_util::StreamExt;
use support::{local_or_offline, search};

/// The assistant: `search` and a researcher child agent as its callables.
fn assistant(model: Arc<dyn ChatModel>) -> Agent {
    let researcher = Agent::builder(model.clone())
        .system("You research questions. Call search, then say in one sentence what it found.")
        .tool(search())
        .first_tool_choice(ToolChoice::Tool("utils.search".into()))
        .max_tool_rounds(1)
        .max_steps(3)
        .max_tokens(120)
        .build()
        .expect("valid tools");
    Agent::builder(model)
        .system("You are a support assistant. Ask the researcher, then reply to the customer in one sentence.")
        .tool(search())
        .tool(researcher.as_tool("researcher", "Researches a question and reports what it found."))
        .first_tool_choice(ToolChoice::Tool("researcher".into()))
        .max_tool_rounds(1)
        .max_steps(3)
        .max_tokens(120)
        .token_budget(20_000)
        .build()
        .expect("valid tools")
}

fn print_steps(steps: &[StepRecord], indent: &str) {
    for step in steps {
        for record in &step.calls {
            println!(
                "{indent}step {}: {}({}) => {}",
                step.index,
                record.call.name,
                record.call.input,
                record.result.output_text()
            );
            if let Some(child) = &record.child {
                println!(
                    "{indent}  child {} ({} tokens):",
                    child.agent,
                    child.usage.total()
                );
                print_steps(&child.steps, &format!("{indent}    "));
            }
        }
    }
}

/// Stream one run, printing events as they come, then the nested record.
async fn run(model: Arc<dyn ChatModel>) -> RunOutcome {
    let agent = assistant(model);
    let mut events = std::pin::pin!(agent.stream("Can this customer get a refund?"));
    let mut last = None;
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::TextDelta { step, text } => println!("[step {step}] text {text:?}"),
            AgentEvent::ToolCall { step, call } => {
                println!("[step {step}] call {}({})", call.name, call.input)
            }
            AgentEvent::ToolResult { step, record } => {
                println!("[step {step}] result {}", record.result.output_text())
            }
            AgentEvent::StepEnd { step } => println!("[step {}] end", step.index),
            AgentEvent::Final { run } => last = Some(*run),
            _ => {}
        }
    }
    let run = last.expect("the stream ends with the run");
    println!("trace:");
    print_steps(&run.steps, "  ");
    println!("reply: {}", run.text());
    println!("tokens: {} (children included)", run.usage.total());
    run
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    run(local_or_offline().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_assistant_delegates_to_its_child_agent() {
    if !support::local_model_present() {
        return;
    }
    let run = run(local_or_offline().await).await;
    let first = &run.steps[0].calls[0];
    assert_eq!(first.call.name, "researcher");
    let child = first.child.as_ref().expect("the researcher ran");
    assert_eq!(child.steps[0].calls[0].call.name, "utils.search");
    assert_eq!(
        child.steps[0].calls[0].result.output,
        serde_json::json!({"title": "Ax docs"})
    );
    let own: u64 = run.steps.iter().map(|s| s.tokens.total()).sum();
    assert_eq!(run.usage.total(), own + child.usage.total());
    assert!(!run.text().trim().is_empty());
}
