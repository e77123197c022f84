//! A tool from a plain function, with defaults and with overrides of the
//! model-facing surface.
//!
//! ```text
//! t1 ::ai::tool/from-fn(add)
//! // => Tool({name: "::myapp/add", input-schema: {...}, fn: add})
//! t2 ::ai::tool/from-fn(add, {name: "add-numbers",
//!                             description: "Add two integers and return the sum."})
//! ```
//!
//! In Rust, `from_fn!(add)` (the same as `add::tool()`) gives the tool;
//! overrides are struct-update syntax.
//!
//! Run: `cargo run -p agentry --example tool_from_fn`

use agentry::tool::Tool;

fn run() -> (Tool, Tool) {
    let t1 = agentry::from_fn!(myapp::add);
    let t2 = Tool {
        name: "add-numbers".into(),
        description: Some("Add two integers and return the sum.".into()),
        ..agentry::from_fn!(myapp::add)
    };
    (t1, t2)
}

fn main() {
    let (t1, t2) = run();
    println!("{}", serde_json::to_string(&t1).expect("serialisable"));
    println!("{}", serde_json::to_string(&t2).expect("serialisable"));
}

#[test]
fn defaults_and_overrides() {
    let (t1, t2) = run();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"]
    });
    assert_eq!(
        serde_json::to_value(&t1).unwrap(),
        serde_json::json!({"name": "myapp::add", "input_schema": schema,
                           "output_schema": {"type": "integer"}, "pass_input": false})
    );
    assert_eq!(t2.name, "add-numbers");
    assert_eq!(
        t2.description.as_deref(),
        Some("Add two integers and return the sum.")
    );
    assert_eq!(t2.input_schema, schema);
    assert_eq!(myapp::add(2, 3), 5, "the function stays callable");
}
