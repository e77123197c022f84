//! A tool's schema from its function: the schema of `search(query, limit)`, computed
//! once and served from the process-global registry.
//!
//! ```text
//! ::ai::tool/schema-from-fn(search)
//! // => {name: "::myapp/search",
//! //     input-schema: {type: "object",
//! //                    properties: {query: {type: "string"},
//! //                                 limit: {type: "integer"}},
//! //                    required: ["query", "limit"]},
//! //     output-schema: {type: "array", items: {type: "string"}}}
//! ```
//!
//! Run: `cargo run -p agentry --example schema_from_fn`

use agentry::tool::ToolSchema;

fn run() -> &'static ToolSchema {
    agentry::schema_from_fn!(myapp::search)
}

fn main() {
    println!("{}", serde_json::to_string(run()).expect("serialisable"));
}

#[test]
fn matches_the_expected_schema() {
    let schema = run();
    assert_eq!(
        serde_json::to_value(schema).unwrap(),
        serde_json::json!({
            "name": "myapp::search",
            "input_schema": {"type": "object",
                             "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                             "required": ["query", "limit"]},
            "output_schema": {"type": "array", "items": {"type": "string"}}
        })
    );
    // Computed once: the same registered value every time, also found by name.
    assert!(std::ptr::eq(schema, run()));
    assert!(std::ptr::eq(
        schema,
        agentry::tool::registry::get("myapp::search").unwrap()
    ));
}
