//! `#[tool]` end to end: schemas from signatures, docs, context injection,
//! `Result` mapping, async functions, overrides and `pass_input`.

use agentry::tool::{Identity, Session, ToolCall, ToolContext, Toolbox};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Divide two numbers.
///
/// # Arguments
///
/// * `numerator` - The number to divide.
/// * `denominator` - What to divide by; must not be zero.
#[agentry::tool(read_only, idempotent, concurrency_safe)]
pub fn divide(numerator: f64, denominator: f64) -> Result<f64, String> {
    if denominator == 0.0 {
        return Err("cannot divide by zero".into());
    }
    Ok(numerator / denominator)
}

/// Greet the current sender.
#[agentry::tool]
pub fn greet(
    ctx: &ToolContext,
    /// How to greet.
    greeting: String,
    /// Add an exclamation mark.
    loud: Option<bool>,
) -> String {
    let who = ctx.sender().map_or("stranger", |sender| sender.id.as_str());
    let tenant = ctx.extra("tenant").and_then(|t| t.as_str()).unwrap_or("-");
    let mark = if loud.unwrap_or(false) { "!" } else { "" };
    format!("{greeting}, {who} of {tenant}{mark}")
}

/// Look up the session id, asynchronously.
#[agentry::tool(name = "session-id", timeout_ms = 500)]
pub async fn session_id(ctx: &ToolContext) -> Option<String> {
    tokio::task::yield_now().await;
    ctx.session().map(|session| session.id.clone())
}

/// A point on a plane.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Point {
    /// Horizontal position.
    pub x: i32,
    /// Vertical position.
    pub y: i32,
}

/// Mirror a point; the whole input is the point.
#[agentry::tool(pass_input, description = "Mirror a point across both axes.")]
pub fn mirror(point: Point) -> Point {
    Point {
        x: -point.x,
        y: -point.y,
    }
}

/// Do nothing, successfully.
#[agentry::tool]
pub fn noop() {}

fn toolbox() -> Toolbox {
    Toolbox::for_agent([
        divide::tool(),
        greet::tool(),
        session_id::tool(),
        mirror::tool(),
        noop::tool(),
    ])
    .unwrap()
}

#[test]
fn names_are_rust_paths_unless_overridden() {
    assert_eq!(divide::NAME, "macro_tools::divide");
    assert_eq!(session_id::NAME, "session-id");
    assert_eq!(divide(1.0, 4.0), Ok(0.25), "still a plain function");
}

#[test]
fn docs_and_signature_become_the_schema() {
    let schema = divide::schema();
    assert_eq!(schema.description.as_deref(), Some("Divide two numbers."));
    assert_eq!(
        schema.input_schema,
        json!({"type": "object", "properties": {
            "numerator": {"type": "number", "description": "The number to divide."},
            "denominator": {"type": "number", "description": "What to divide by; must not be zero."}},
            "required": ["numerator", "denominator"]})
    );
    assert_eq!(schema.output_schema, Some(json!({"type": "number"})));
    let hints = divide::tool().hints;
    assert!(hints.read_only && hints.idempotent && hints.concurrency_safe && !hints.destructive);
}

#[test]
fn context_is_injected_not_advertised() {
    let schema = greet::schema();
    assert_eq!(
        schema.input_schema,
        json!({"type": "object", "properties": {
            "greeting": {"type": "string", "description": "How to greet."},
            "loud": {"type": ["boolean", "null"], "description": "Add an exclamation mark."}},
            "required": ["greeting"]})
    );
    assert_eq!(
        session_id::schema().input_schema,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        session_id::tool().hints.timeout,
        Some(std::time::Duration::from_millis(500))
    );
    assert_eq!(noop::schema().output_schema, None);
}

#[tokio::test]
async fn harness_context_reaches_the_tool_and_model_cannot_spoof_it() {
    let tools = toolbox();
    let ctx = ToolContext::new()
        .with_session(Session::new("s-42"))
        .with_sender(Identity::new("alice"))
        .with_extra("tenant", json!("acme"));
    let call = ToolCall::new("1", greet::NAME, json!({"greeting": "Hello", "loud": true}));
    let result = tools.dispatch_with(call, &ctx).await;
    assert_eq!(result.output, json!("Hello, alice of acme!"));

    let spoof = ToolCall::new(
        "2",
        greet::NAME,
        json!({"greeting": "Hi", "ctx": {"sender": "mallory"}, "tenant": "evil"}),
    );
    let result = tools.dispatch_with(spoof, &ctx).await;
    assert!(result.is_error);
    assert_eq!(
        result.output,
        json!(
            "invalid input for tool \"macro_tools::greet\":\n\
               - /ctx: unknown argument; this tool takes: greeting, loud\n\
               - /tenant: unknown argument; this tool takes: greeting, loud"
        )
    );

    let result = tools
        .dispatch_with(ToolCall::new("3", "session-id", json!({})), &ctx)
        .await;
    assert_eq!(result.output, json!("s-42"));
    let result = tools
        .dispatch(ToolCall::new("4", "session-id", json!({})))
        .await;
    assert_eq!(result.output, json!(null));
}

#[tokio::test]
async fn results_map_err_to_error_results() {
    let tools = toolbox();
    let ok = tools
        .dispatch(ToolCall::new(
            "a",
            divide::NAME,
            json!({"numerator": 1, "denominator": 4}),
        ))
        .await;
    assert_eq!(
        serde_json::to_string(&ok).unwrap(),
        r#"{"id":"a","output":0.25,"is_error":false}"#
    );
    let err = tools
        .dispatch(ToolCall::new(
            "b",
            divide::NAME,
            json!({"numerator": 1, "denominator": 0}),
        ))
        .await;
    assert_eq!(
        serde_json::to_string(&err).unwrap(),
        r#"{"id":"b","output":"tool \"macro_tools::divide\" failed: cannot divide by zero","is_error":true}"#
    );
}

#[tokio::test]
async fn pass_input_hands_over_the_whole_object() {
    let tools = toolbox();
    assert!(tools.find_by_name(mirror::NAME).unwrap().pass_input);
    assert_eq!(
        mirror::schema().description.as_deref(),
        Some("Mirror a point across both axes.")
    );
    assert_eq!(mirror::schema().input_schema["required"], json!(["x", "y"]));
    let result = tools
        .dispatch(ToolCall::new("m", mirror::NAME, json!({"x": 1, "y": -2})))
        .await;
    assert_eq!(result.output, json!({"x": -1, "y": 2}));
    let result = tools
        .dispatch(ToolCall::new("n", noop::NAME, json!({})))
        .await;
    assert_eq!((result.output, result.is_error), (json!(null), false));
}

#[tokio::test]
async fn wire_names_dispatch_too() {
    let tools = toolbox();
    let wire = tools.wire_name(divide::NAME).unwrap().to_owned();
    assert_eq!(wire, "macro_tools__divide");
    let result = tools
        .dispatch(ToolCall::new(
            "w",
            wire,
            json!({"numerator": 9, "denominator": 3}),
        ))
        .await;
    assert_eq!(result.output, json!(3.0));
}
