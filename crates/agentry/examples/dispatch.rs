//! Validated dispatch: invoke `add` through a toolbox.
//!
//! ```text
//! call ToolCall({id: "call_1", name: "::myapp/add", input: {x: 2, y: 3}})
//! ::ai::tool/dispatch(tools, call)
//! // => ToolResult({id: "call_1", output: 5, is-error: false})
//! ```
//!
//! Run: `cargo run -p agentry --example dispatch`

use agentry::tool::{ToolCall, ToolResult, dispatch, for_agent};
use serde_json::json;

async fn run() -> ToolResult {
    let tools = for_agent([myapp::add::tool()]).expect("a valid toolbox");
    let call = ToolCall::new("call_1", "myapp::add", json!({"x": 2, "y": 3}));
    dispatch(&tools, call).await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!(
        "{}",
        serde_json::to_string(&run().await).expect("serialisable")
    );
}

#[tokio::test]
async fn prints_the_tool_result() {
    let printed = serde_json::to_string(&run().await).unwrap();
    assert_eq!(printed, r#"{"id":"call_1","output":5,"is_error":false}"#);
}
