//! The `Tool` type: `search-docs` with its doc string as the description.
//!
//! ```text
//! web-search-tool ::ai::tool/from-fn(search-docs)
//! // => Tool({name: "::myapp/search-docs",
//! //          description: "Search project documentation.",
//! //          input-schema: {type: "object", ...},
//! //          fn: search-docs, ...})
//! ```
//!
//! Run: `cargo run -p agentry --example tool_by_hand`

use agentry::tool::Tool;

fn run() -> Tool {
    myapp::search_docs::tool()
}

fn main() {
    println!(
        "{}",
        serde_json::to_string_pretty(&run()).expect("serialisable")
    );
}

#[test]
fn derives_every_field() {
    let tool = run();
    assert_eq!(
        serde_json::to_value(&tool).unwrap(),
        serde_json::json!({
            "name": "myapp::search_docs",
            "description": "Search project documentation.",
            "input_schema": {"type": "object",
                             "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                             "required": ["query", "limit"]},
            "output_schema": {"type": "array", "items": {"type": "string"}},
            "pass_input": false
        })
    );
    assert!(!tool.pass_input);
}
