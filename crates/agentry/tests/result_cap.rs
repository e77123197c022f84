//! Every result dispatch hands back is cut to the toolbox's limit (1 MiB
//! unless set otherwise), at a character boundary, and says how long it was:
//! a tool that returns a huge value cannot flood the model or the journal.

use std::sync::Arc;

use agentry::agent::Agent;
use agentry::model::{ScriptedModel, Step, Usage};
use agentry::tool::{
    DEFAULT_MAX_RESULT_BYTES, ToolCall, ToolContext, ToolResult, Toolbox, function,
};
use serde_json::{Value, json};

/// Sixteen MiB of two-byte characters.
#[agentry::tool]
pub fn flood() -> String {
    "é".repeat(8 << 20)
}

/// The same, inline (the typed JSON route of `dispatch_json`).
#[agentry::tool(inline)]
pub fn flood_inline() -> String {
    "é".repeat(8 << 20)
}

/// A million numbers: structured output over the limit.
#[agentry::tool]
pub fn numbers() -> Vec<u32> {
    (0..1_000_000).collect()
}

/// Fails with sixteen MiB of message.
#[agentry::tool]
pub fn loud_failure() -> Result<i64, String> {
    Err("x".repeat(16 << 20))
}

fn toolbox() -> Toolbox {
    Toolbox::for_agent([
        flood::tool(),
        flood_inline::tool(),
        numbers::tool(),
        loud_failure::tool(),
    ])
    .unwrap()
}

async fn call(tools: &Toolbox, id: &str, name: &str) -> ToolResult {
    tools.dispatch(ToolCall::new(id, name, json!({}))).await
}

/// The text a cut result carries: `shown` then the notice.
fn cut(shown: &str, total: usize) -> String {
    format!(
        "{shown}\n[tool result cut: {} of {total} bytes shown]",
        shown.len()
    )
}

#[tokio::test]
async fn a_huge_string_is_cut_to_one_mebibyte_at_a_character_boundary() {
    let tools = toolbox();
    assert_eq!(tools.max_result_bytes(), DEFAULT_MAX_RESULT_BYTES);
    assert_eq!(DEFAULT_MAX_RESULT_BYTES, 1 << 20);
    let expected = ToolResult::ok("f1", json!(cut(&"é".repeat(1 << 19), 16 << 20)));
    assert_eq!(call(&tools, "f1", flood::NAME).await, expected);

    // The typed JSON route cuts the same way.
    let text = format!(
        r#"{{"id":"f1","name":"{}","input":{{}}}}"#,
        flood_inline::NAME
    );
    let fast = tools.dispatch_json(&text, &ToolContext::new()).await;
    assert_eq!(fast, expected);

    // A limit inside a two-byte character keeps the whole characters before it.
    let tight = tools.clone().with_max_result_bytes(5);
    assert_eq!(
        call(&tight, "f2", flood::NAME).await,
        ToolResult::ok("f2", json!(cut("éé", 16 << 20)))
    );
}

#[tokio::test]
async fn structured_output_and_error_messages_are_cut_too() {
    let tools = toolbox().with_max_result_bytes(20);
    let total = serde_json::to_string(&(0..1_000_000).collect::<Vec<u32>>())
        .unwrap()
        .len();
    assert_eq!(
        call(&tools, "n1", numbers::NAME).await,
        ToolResult::ok("n1", json!(cut("[0,1,2,3,4,5,6,7,8,9", total)))
    );
    let tools = tools.with_max_result_bytes(100);
    let header = format!("tool \"{}\" failed: ", loud_failure::NAME);
    let shown = format!("{header}{}", "x".repeat(100 - header.len()));
    assert_eq!(
        call(&tools, "e1", loud_failure::NAME).await,
        ToolResult::error("e1", cut(&shown, header.len() + (16 << 20)))
    );
}

#[tokio::test]
async fn the_agent_builder_sets_the_limit_and_the_run_records_the_cut_result() {
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("a1", flood::NAME, json!({}))],
            text: String::new(),
            tokens: Usage::new(1, 1),
        })
        .reply(Step::Final {
            text: "done".into(),
            tokens: Usage::new(1, 1),
        });
    let agent = Agent::builder(Arc::new(model))
        .tool(flood::tool())
        .max_result_bytes(4)
        .build()
        .unwrap();
    assert_eq!(agent.toolbox().max_result_bytes(), 4);
    let echo = function("echo")
        .handler(|input: Value| Ok::<_, String>(input))
        .build()
        .unwrap();
    let more = agent.toolbox().with_tools([echo]).unwrap();
    assert_eq!(more.max_result_bytes(), 4, "adding tools keeps the limit");

    let run = agent.run("go").await;
    let results: Vec<&ToolResult> = run
        .steps
        .iter()
        .flat_map(|step| &step.calls)
        .map(|record| &record.result)
        .collect();
    assert_eq!(results, [&ToolResult::ok("a1", json!(cut("éé", 16 << 20)))]);
}
