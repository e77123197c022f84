//! The quick demo (README command 1, until the local-model agent lands): plain
//! functions become tools, a toolbox advertises them under provider-safe wire
//! names, and validated dispatch answers good and bad calls alike.
//!
//! Run: `cargo run -p agentry --example demo`

use agentry::tool::{ToolCall, ToolContext, Toolbox, function};
use serde::Deserialize;
use serde_json::json;

/// Add two integers.
#[agentry::tool(read_only, concurrency_safe)]
fn add(x: i64, y: i64) -> i64 {
    x + y
}

/// Divide one number by another.
///
/// # Arguments
/// * `numerator` - The number to divide.
/// * `denominator` - The number to divide by; never zero.
#[agentry::tool(read_only)]
fn divide(numerator: f64, denominator: f64) -> Result<f64, String> {
    if denominator == 0.0 {
        Err("division by zero; ask the user for another denominator".into())
    } else {
        Ok(numerator / denominator)
    }
}

/// Who is asking, from the request context the harness bound.
#[agentry::tool]
async fn whoami(ctx: &ToolContext) -> String {
    ctx.sender()
        .map_or_else(|| "anonymous".into(), |s| s.id.clone())
}

#[derive(Deserialize)]
struct Convert {
    celsius: f64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let to_fahrenheit = function("to_fahrenheit")
        .namespace("units")
        .description("Convert a temperature from Celsius to Fahrenheit.")
        .arg::<f64>("celsius", "Temperature in °C")
        .returns::<f64>()
        .handler(|c: Convert| Ok::<_, String>(c.celsius * 9.0 / 5.0 + 32.0))
        .build()?;
    let tools = Toolbox::for_agent([add::tool(), divide::tool(), whoami::tool(), to_fahrenheit])?;

    println!("tools (name -> wire name):");
    for name in tools.names() {
        println!("  {name} -> {}", tools.wire_name(name).unwrap_or("?"));
    }

    let ctx = ToolContext::new().with_sender(agentry::tool::Identity::new("alice"));
    let calls = [
        ToolCall::new("call_1", add::NAME, json!({"x": 2, "y": 3})),
        ToolCall::new("call_2", "units.to_fahrenheit", json!({"celsius": 21.5})),
        ToolCall::new(
            "call_3",
            divide::NAME,
            json!({"numerator": 1, "denominator": 0}),
        ),
        ToolCall::new("call_4", add::NAME, json!({"x": "two"})),
        ToolCall::new("call_5", "ad", json!({})),
        ToolCall::new("call_6", whoami::NAME, json!({})),
    ];
    println!("\ncalls and results:");
    for call in calls {
        println!("  {}", serde_json::to_string(&call)?);
        let result = tools.dispatch_with(call, &ctx).await;
        println!("  => {}\n", serde_json::to_string(&result)?);
    }
    Ok(())
}
