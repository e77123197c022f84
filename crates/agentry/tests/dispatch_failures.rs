//! Every way a dispatch can fail comes back as `is_error: true` with a
//! message a model can act on, and the call id echoed.

use std::time::Duration;

use agentry::tool::{ToolCall, ToolContext, ToolResult, Toolbox, function};
use serde_json::{Value, json};

/// Add two integers.
#[agentry::tool]
pub fn add(x: i64, y: i64) -> i64 {
    x + y
}

/// Subtract two integers.
#[agentry::tool]
pub fn sub(x: i64, y: i64) -> i64 {
    x - y
}

/// Always panics.
#[agentry::tool]
pub fn explode(reason: String) -> i64 {
    panic!("exploded: {reason}")
}

/// Never finishes in time.
#[agentry::tool(timeout_ms = 50)]
pub async fn hang() -> i64 {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    0
}

/// A blocking function that overruns its deadline.
#[agentry::tool(timeout_ms = 50)]
pub fn block() -> i64 {
    std::thread::sleep(Duration::from_millis(400));
    1
}

/// Count the characters of a text.
#[agentry::tool]
pub fn length(text: String) -> usize {
    text.chars().count()
}

fn toolbox() -> Toolbox {
    let liar = function("liar")
        .namespace("bad")
        .description("Promises an integer, returns a string.")
        .returns::<i64>()
        .handler(|_: Value| Ok::<_, String>(json!("not a number")))
        .build()
        .unwrap();
    Toolbox::for_agent([
        add::tool(),
        sub::tool(),
        explode::tool(),
        hang::tool(),
        block::tool(),
        length::tool(),
        liar,
    ])
    .unwrap()
}

async fn call(tools: &Toolbox, id: &str, name: &str, input: Value) -> ToolResult {
    tools.dispatch(ToolCall::new(id, name, input)).await
}

fn error(id: &str, message: &str) -> ToolResult {
    ToolResult::error(id, message)
}

#[tokio::test]
async fn unknown_name_lists_the_closest_known_names() {
    let tools = toolbox();
    let result = call(&tools, "c1", "ad", json!({"x": 1, "y": 2})).await;
    assert_eq!(
        result,
        error(
            "c1",
            "unknown tool \"ad\"; closest known tools: dispatch_failures::add"
        )
    );
    let result = call(&tools, "c2", "dispatch_failures::sum", json!({})).await;
    assert_eq!(
        result,
        error(
            "c2",
            "unknown tool \"dispatch_failures::sum\"; closest known tools: dispatch_failures::sub, dispatch_failures::add, dispatch_failures::hang"
        )
    );
    let result = call(&tools, "c3", "zzzzzz", json!({})).await;
    assert_eq!(
        result,
        error(
            "c3",
            "unknown tool \"zzzzzz\"; known tools: dispatch_failures::add, dispatch_failures::sub, \
             dispatch_failures::explode, dispatch_failures::hang, dispatch_failures::block, \
             dispatch_failures::length, bad.liar"
        )
    );
    let empty = Toolbox::for_agent(Vec::<agentry::tool::Tool>::new()).unwrap();
    assert_eq!(
        call(&empty, "c4", "add", json!({})).await,
        error("c4", "unknown tool \"add\"; no tools are available")
    );
}

#[tokio::test]
async fn schema_violations_are_listed_one_per_line() {
    let tools = toolbox();
    let result = call(&tools, "v1", add::NAME, json!({"x": "2", "z": true})).await;
    assert_eq!(
        result,
        error(
            "v1",
            "invalid input for tool \"dispatch_failures::add\":\n\
             - (root): \"y\" is a required property\n\
             - /x: \"2\" is not of type \"integer\"\n\
             - /z: unknown argument; this tool takes: x, y"
        )
    );
    let result = call(&tools, "v2", add::NAME, json!([1, 2])).await;
    assert_eq!(
        result,
        error(
            "v2",
            "invalid input for tool \"dispatch_failures::add\":\n- (root): [1,2] is not of type \"object\""
        )
    );
}

#[tokio::test]
async fn handler_panics_are_caught_and_the_toolbox_stays_usable() {
    let tools = toolbox();
    let result = call(&tools, "p1", explode::NAME, json!({"reason": "boom"})).await;
    assert_eq!(
        result,
        error(
            "p1",
            "tool \"dispatch_failures::explode\" panicked: exploded: boom"
        )
    );
    for i in 0..3 {
        let result = call(&tools, "after", add::NAME, json!({"x": i, "y": 1})).await;
        assert_eq!(result, ToolResult::ok("after", json!(i + 1)));
    }
}

#[tokio::test]
async fn timeouts_apply_to_async_and_blocking_tools() {
    let tools = toolbox();
    let result = call(&tools, "t1", hang::NAME, json!({})).await;
    assert_eq!(
        result,
        error(
            "t1",
            "tool \"dispatch_failures::hang\" timed out after 50ms"
        )
    );
    let result = call(&tools, "t2", block::NAME, json!({})).await;
    assert_eq!(
        result,
        error(
            "t2",
            "tool \"dispatch_failures::block\" timed out after 50ms"
        )
    );
    // The toolbox default covers async tools with no timeout of their own.
    let slow = function("slow")
        .handler(|_: Value, _ctx: ToolContext| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, String>(0)
        })
        .build()
        .unwrap();
    let tools = Toolbox::for_agent([slow])
        .unwrap()
        .with_default_timeout(Duration::from_millis(20));
    let result = call(&tools, "t3", "utils.slow", json!({})).await;
    assert_eq!(
        result,
        error("t3", "tool \"utils.slow\" timed out after 20ms")
    );
}

#[tokio::test]
async fn output_that_breaks_the_output_schema_is_an_error() {
    let tools = toolbox();
    let result = call(&tools, "o1", "bad.liar", json!({})).await;
    assert_eq!(
        result,
        error(
            "o1",
            "tool \"bad.liar\" returned output that does not match its output schema:\n\
             - (root): \"not a number\" is not of type \"integer\""
        )
    );
}

#[tokio::test]
async fn a_ten_megabyte_argument_is_handled_and_never_echoed_whole() {
    let tools = toolbox();
    let big = "é".repeat(5 * 1024 * 1024); // 10 MiB of UTF-8
    assert_eq!(big.len(), 10 * 1024 * 1024);
    let result = call(&tools, "big1", length::NAME, json!({"text": big})).await;
    assert_eq!(result, ToolResult::ok("big1", json!(5 * 1024 * 1024)));

    let result = call(&tools, "big2", add::NAME, json!({"x": big, "y": 1})).await;
    let expected = format!(
        "invalid input for tool \"dispatch_failures::add\":\n- /x: \"{}\"… (5242880 characters) is not of type \"integer\"",
        "é".repeat(60)
    );
    assert_eq!(result, error("big2", &expected));

    let text = format!(
        r#"{{"id":"big3","name":"{}","input":{{"text":"{big}"}}}}"#,
        length::NAME
    );
    let result = tools.dispatch_json(&text, &ToolContext::new()).await;
    assert_eq!(result, ToolResult::ok("big3", json!(5 * 1024 * 1024)));
}

#[tokio::test]
async fn deeply_nested_json_neither_crashes_nor_hangs() {
    let tools = toolbox();
    let depth = 100_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let text = format!(
        r#"{{"id":"deep","name":"{}","input":{{"text":{nested}}}}}"#,
        length::NAME
    );
    let result = tools.dispatch_json(&text, &ToolContext::new()).await;
    assert_eq!(
        result,
        error(
            "deep",
            "malformed tool call: \"input\" could not be decoded: recursion limit exceeded at line 1 column 135"
        )
    );
    // An object nested as deep, with the id after the input.
    let nested = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    let text = format!(
        r#"{{"name":"{}","input":{nested},"id":"deep2"}}"#,
        add::NAME
    );
    let result = tools.dispatch_json(&text, &ToolContext::new()).await;
    assert_eq!(result.id, "deep2");
    assert!(result.is_error);
}

#[tokio::test]
async fn malformed_calls_still_echo_what_id_they_can() {
    let tools = toolbox();
    let ctx = ToolContext::new();
    let result = tools
        .dispatch_json(r#"{"id": 7, "name": "ad", "input": {}}"#, &ctx)
        .await;
    assert_eq!(
        result,
        error(
            "7",
            "unknown tool \"ad\"; closest known tools: dispatch_failures::add"
        )
    );
    let result = tools
        .dispatch_json(r#"{"id": "x1", "name": 3}"#, &ctx)
        .await;
    assert_eq!(
        result,
        error("x1", "malformed tool call: \"name\" must be a string")
    );
    let result = tools.dispatch_json(r#"{"id": "x2", "name": "#, &ctx).await;
    assert_eq!(
        result,
        error(
            "",
            "malformed tool call: EOF while parsing a value at line 1 column 21"
        )
    );
    let text = format!(r#"{{"id":"x3","name":"{}"}}"#, add::NAME);
    let result = tools.dispatch_json(&text, &ctx).await;
    assert_eq!(result.id, "x3");
    assert!(
        result
            .output
            .as_str()
            .unwrap()
            .contains("\"x\" is a required property")
    );
}
