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

/// Why a city could not be looked up: a real error type.
#[derive(Debug)]
pub struct NoStation(String);

impl std::fmt::Display for NoStation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no weather station in {}", self.0)
    }
}

impl std::error::Error for NoStation {}

/// Look up the weather of a city.
#[agentry::tool]
pub fn weather(city: String) -> Result<String, NoStation> {
    Err(NoStation(city))
}

/// Refuse with a chosen tool error.
#[agentry::tool]
pub fn strict(limit: u32) -> Result<u32, agentry::tool::ToolError> {
    Err(agentry::tool::ToolError::InvalidArgument {
        pointer: "/limit".into(),
        message: format!("{limit} is over the quota"),
    })
}

#[tokio::test]
async fn an_error_type_is_kept_as_the_source_and_a_tool_error_as_it_is() {
    let ctx = ToolContext::default();
    let error = weather::tool()
        .handler
        .call(json!({"city": "Atlantis"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "no weather station in Atlantis");
    let source = std::error::Error::source(&error).expect("the handler's error is the source");
    assert_eq!(
        source.downcast_ref::<NoStation>().map(|e| e.0.as_str()),
        Some("Atlantis")
    );
    // The model reads the same words as from a `Result<_, String>`.
    let tools = Toolbox::for_agent([weather::tool(), strict::tool()]).unwrap();
    let result = tools
        .dispatch(ToolCall::new(
            "w",
            weather::NAME,
            json!({"city": "Atlantis"}),
        ))
        .await;
    assert_eq!(
        result.output,
        json!("tool \"macro_tools::weather\" failed: no weather station in Atlantis")
    );

    let error = strict::tool()
        .handler
        .call(json!({"limit": 9}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        agentry::tool::ToolError::InvalidArgument {
            pointer: "/limit".into(),
            message: "9 is over the quota".into()
        }
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

/// Shared state for the `State<T>` tools: a price list.
struct Prices {
    per_kg: f64,
}

/// Price a weight with the shared price list.
#[agentry::tool(name = "price")]
fn price(agentry::tool::State(prices): agentry::tool::State<Prices>, kg: f64) -> f64 {
    prices.per_kg * kg
}

/// The same, asynchronously, with the context beside the state.
#[agentry::tool(name = "price_async")]
async fn price_async(ctx: &ToolContext, prices: agentry::tool::State<Prices>, kg: f64) -> String {
    let who = ctx.sender().map_or("?", |s| s.id.as_str());
    format!("{who}: {}", prices.per_kg * kg)
}

#[tokio::test]
async fn state_parameters_receive_the_shared_state_and_stay_out_of_the_schema() {
    assert_eq!(
        price::schema().input_schema,
        json!({"type": "object", "properties": {"kg": {"type": "number"}}, "required": ["kg"]})
    );
    let tools = Toolbox::for_agent([price::tool(), price_async::tool()]).unwrap();
    let ctx = ToolContext::new()
        .with_sender(Identity::new("ana"))
        .with_state(Prices { per_kg: 2.5 });
    let sync = tools
        .dispatch_with(ToolCall::new("1", "price", json!({"kg": 4})), &ctx)
        .await;
    assert_eq!(sync.output, json!(10.0));
    let asynchronous = tools
        .dispatch_with(ToolCall::new("2", "price_async", json!({"kg": 2})), &ctx)
        .await;
    assert_eq!(asynchronous.output, json!("ana: 5"));
    // Without the state the call fails with a message naming the type.
    let missing = tools
        .dispatch(ToolCall::new("3", "price", json!({"kg": 1})))
        .await;
    assert_eq!(
        missing.error_message(),
        Some(
            "tool \"price\" failed: this tool needs shared state of type macro_tools::Prices, which the program did not attach"
        )
    );
    // Through an agent: `AgentBuilder::state` attaches it.
    let model = agentry::model::ScriptedModel::new()
        .reply(agentry::model::Step::Tool {
            calls: vec![ToolCall::new("c", "price", json!({"kg": 3}))],
            text: String::new(),
            tokens: agentry::model::Usage::default(),
        })
        .reply(agentry::model::Step::Final {
            text: "7.5".into(),
            tokens: agentry::model::Usage::default(),
        });
    let run = agentry::agent::Agent::builder(model)
        .tool(price::tool())
        .state(Prices { per_kg: 2.5 })
        .build()
        .unwrap()
        .run("price 3 kg")
        .await;
    assert_eq!(run.steps[0].calls[0].result.output, json!(7.5));
}

mod billing {
    /// Find an invoice.
    #[agentry::tool(name = "lookup")]
    pub fn lookup(invoice: u32) -> String {
        format!("invoice {invoice}")
    }
}

mod kb {
    /// Find a policy.
    #[agentry::tool(name = "lookup")]
    pub fn lookup(query: String, limit: Option<u8>) -> Vec<String> {
        vec![query; usize::from(limit.unwrap_or(1))]
    }
}

#[test]
fn two_functions_with_one_name_keep_their_own_schemas_and_the_clash_is_an_error() {
    // Found in a review: both used to get the first one's schema, so one was
    // validated against the wrong schema. Each keeps its own now...
    let billing = billing::lookup::schema();
    let kb = kb::lookup::schema();
    let properties = |schema: &agentry::tool::ToolSchema| -> Vec<String> {
        schema.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(properties(billing), ["invoice"]);
    assert_eq!(properties(kb), ["query", "limit"]);
    assert_eq!(
        kb::lookup::tool().input_schema["properties"]["query"],
        json!({"type": "string"})
    );
    // ...and the registry refuses to pick one of them for the name.
    assert_eq!(
        agentry::tool::registry::lookup("lookup"),
        Err(agentry::tool::SchemaConflict {
            name: "lookup".into()
        })
    );
    assert!(agentry::tool::registry::get("lookup").is_none());
    assert_eq!(
        agentry::tool::registry::register(billing)
            .unwrap_err()
            .to_string(),
        "two different tools are registered as \"lookup\"; give one of them another name (#[tool(name = \"...\")]): a name must identify one schema"
    );
    // Both in one toolbox is the old duplicate-name error.
    assert!(Toolbox::for_agent([billing::lookup::tool(), kb::lookup::tool()]).is_err());
}
