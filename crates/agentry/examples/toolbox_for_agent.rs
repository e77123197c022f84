//! A toolbox for an agent: a `#[tool]` function and a pre-built `Tool` record
//! normalised into one toolbox.
//!
//! ```text
//! web-tool Tool({name: "web", input-schema: {...}, fn: search})
//! tools ::ai::tool/for-agent([search, web-tool])
//! // => [Tool({name: "::myapp/search", ...}),
//! //     Tool({name: "web", ...})]
//! ```
//!
//! Run: `cargo run -p agentry --example toolbox_for_agent`

use agentry::tool::{Tool, Toolbox, for_agent};

fn run() -> Toolbox {
    // A pre-built record: its own name, the same handler and schema as `search`.
    let web_tool = Tool {
        name: "web".into(),
        ..myapp::search::tool()
    };
    for_agent([myapp::search::tool(), web_tool]).expect("a valid toolbox")
}

fn main() {
    let tools = run();
    println!(
        "{}",
        serde_json::to_string_pretty(&tools.to_vec()).expect("serialisable")
    );
}

#[test]
fn normalises_both_entries_in_order() {
    let tools = run();
    assert_eq!(tools.names().collect::<Vec<_>>(), ["myapp::search", "web"]);
    let printed = serde_json::to_value(tools.to_vec()).unwrap();
    assert_eq!(printed[0]["name"], "myapp::search");
    assert_eq!(printed[1]["name"], "web");
    assert_eq!(printed[0]["input_schema"], printed[1]["input_schema"]);
}
