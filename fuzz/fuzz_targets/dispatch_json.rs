//! `Toolbox::dispatch_json` on any bytes, over tools of varied shapes: typed
//! inline ones (the typed JSON route), a pooled one, nested structs, enums,
//! a hand-written schema and a `pass_input` tool. It must never panic, and
//! every result must echo a string id.
#![no_main]

use agentry::tool::{Tool, ToolContext, ToolHandler, Toolbox, function};
use futures_util::FutureExt;
use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Add two integers.
#[agentry::tool(name = "add", inline)]
fn add(x: i64, y: i64) -> i64 {
    x.wrapping_add(y)
}

/// Everything typed.
#[agentry::tool(name = "mix", inline)]
#[allow(clippy::too_many_arguments)]
fn mix(
    a: u8,
    b: f64,
    c: String,
    d: bool,
    e: Option<i32>,
    f: Vec<String>,
    g: Option<Vec<u16>>,
) -> String {
    format!("{a}{b}{c}{d}{e:?}{f:?}{g:?}")
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Point {
    x: f64,
    y: f64,
    label: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Mode {
    Fast,
    Careful { retries: u8 },
}

/// Nested structs and enums.
#[agentry::tool(name = "plot", inline)]
fn plot(points: Vec<Point>, mode: Mode) -> usize {
    points.len() + matches!(mode, Mode::Careful { .. }) as usize
}

/// The whole input.
#[agentry::tool(name = "echo", pass_input, inline)]
fn echo(input: Value) -> Value {
    input
}

fn toolbox() -> &'static Toolbox {
    static TOOLS: OnceLock<Toolbox> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let pattern = function("lookup")
            .namespace("kb")
            .arg_schema(
                "query",
                json!({"type": "string", "minLength": 1, "maxLength": 40, "pattern": "^[a-z ]+$"}),
                "What to look for",
                true,
            )
            .arg_schema(
                "limit",
                json!({"type": "integer", "minimum": 1, "maximum": 10}),
                "How many",
                false,
            )
            .returns_schema(json!({"type": "array", "items": {"type": "string"}}))
            .handler(|args: Value| Ok::<_, String>(vec![args["query"].to_string()]))
            .build()
            .unwrap();
        let raw = Tool::new(
            "raw",
            json!({"type": "object", "additionalProperties": true}),
            ToolHandler::sync(|input, _| Ok(input)),
        );
        let mut raw = raw;
        raw.hints.inline = true;
        Toolbox::for_agent([
            add::tool(),
            mix::tool(),
            plot::tool(),
            echo::tool(),
            pattern,
            raw,
        ])
        .unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Every tool here runs inline: the call completes in one poll.
    let result = toolbox()
        .dispatch_json(text, &ToolContext::new())
        .now_or_never()
        .expect("inline tools finish at once");
    if result.is_error {
        assert!(result.output.is_string(), "an error result is a message");
    }
});
