//! The function builder: a namespaced `kb.find_policy` with typed
//! arguments, a typed return, examples and a host handler; the default
//! namespace `utils`; and a reserved name refused by `build`.
//!
//! Run: `cargo run -p agentry --example function_builder`

use agentry::tool::{BuildError, Tool, ToolCall, ToolExample, ToolResult, Toolbox, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The arguments of `kb.find_policy`.
#[derive(Deserialize)]
struct FindPolicy {
    query: String,
    limit: Option<usize>,
}

/// One policy snippet.
#[derive(Serialize, JsonSchema)]
struct Snippet {
    /// Policy title.
    title: String,
    /// The matching text.
    text: String,
}

const POLICIES: &[(&str, &str)] = &[
    (
        "Refunds",
        "Refunds are accepted within 30 days of delivery.",
    ),
    ("Shipping", "Orders ship within two business days."),
    ("Refund exceptions", "Gift cards cannot be refunded."),
];

fn find_policy() -> Tool {
    function("find_policy")
        .namespace("kb")
        .description("Find policy snippets that answer a customer question. Use for refunds, shipping and returns.")
        .arg::<String>("query", "Words to look for in the policy text")
        .optional_arg::<usize>("limit", "Most snippets to return (default 3)")
        .returns::<Vec<Snippet>>()
        .example(
            ToolExample::new(json!({"query": "refund"}))
                .description("A customer asks whether they can still return an item"),
        )
        .example(ToolExample::new(json!({"query": "shipping", "limit": 1})))
        .handler(|args: FindPolicy| {
            let needle = args.query.to_lowercase();
            let hits: Vec<Snippet> = POLICIES
                .iter()
                .filter(|(title, text)| format!("{title} {text}").to_lowercase().contains(&needle))
                .take(args.limit.unwrap_or(3))
                .map(|(title, text)| Snippet {
                    title: (*title).into(),
                    text: (*text).into(),
                })
                .collect();
            Ok::<_, String>(hits)
        })
        .build()
        .expect("a valid function")
}

fn lookup_product() -> Tool {
    function("lookup_product")
        .description("Price and stock of a product.")
        .arg::<String>("sku", "Product code")
        .returns_field::<f64>("price", "Price in EUR")
        .returns_field::<bool>("in_stock", "Whether it can ship today")
        .handler(|_: serde_json::Value| Ok::<_, String>(json!({"price": 79.99, "in_stock": true})))
        .build()
        .expect("a valid function")
}

fn reserved() -> BuildError {
    function("discover")
        .handler(|_: serde_json::Value| Ok::<_, String>(()))
        .build()
        .expect_err("reserved")
}

async fn run() -> (Tool, ToolResult, Tool, BuildError) {
    let tools = Toolbox::for_agent([find_policy(), lookup_product()]).expect("a valid toolbox");
    let result = tools
        .dispatch(ToolCall::new(
            "call_1",
            "kb.find_policy",
            json!({"query": "refund", "limit": 2}),
        ))
        .await;
    (find_policy(), result, lookup_product(), reserved())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (policy, result, product, error) = run().await;
    println!(
        "{}",
        serde_json::to_string_pretty(&policy).expect("serialisable")
    );
    println!("{}", serde_json::to_string(&result).expect("serialisable"));
    println!("{}", product.name);
    println!("{error}");
}

#[tokio::test]
async fn builds_namespaced_tools() {
    let (policy, result, product, error) = run().await;
    assert_eq!(policy.name, "kb.find_policy");
    assert_eq!(policy.examples.len(), 2);
    assert_eq!(
        policy.input_schema,
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "Words to look for in the policy text"},
            "limit": {"type": "integer", "minimum": 0, "description": "Most snippets to return (default 3)"}},
            "required": ["query"]})
    );
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"id": "call_1", "is_error": false, "output": [
            {"title": "Refunds", "text": "Refunds are accepted within 30 days of delivery."},
            {"title": "Refund exceptions", "text": "Gift cards cannot be refunded."}]})
    );
    assert_eq!(product.name, "utils.lookup_product");
    assert!(matches!(error, BuildError::Reserved { what: "name", .. }));
}
