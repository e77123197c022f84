//! Tool calling and the safe loop.
//!
//! 1. A tool is a normal function; `call` invokes it with named args from a map:
//!    `print(call(get_weather, {"city": "Lima"}))` shows `weather in Lima: sunny`.
//! 2. The safe loop: the model only returns a tool name; the program decides
//!    whether it runs. A name not on the allow-list is fed back as `not allowed`.
//!    (The model here is scripted to call an injected name, as a hijacked model would.)
//! 3. Offline, a model step is `{kind: "final", text: "[no llm provider]", tokens: 0}`.
//!
//! Run: `cargo run -p agentry --example safe_tool_calling`

use agentry::agent::{Agent, RunOutcome};
use agentry::model::{OfflineModel, ScriptedModel, Step, Usage};
use agentry::tool::call;
use agentry::tool::{Capability, ToolCall, Toolbox};
use serde_json::json;

/// Weather for a city.
#[agentry::tool(name = "get_weather", net = "api.weather.com")]
fn get_weather(city: String) -> String {
    "weather in ".to_owned() + &city + ": sunny"
}

/// The run's trace: ` [name => result]` per call.
fn trace(run: &RunOutcome) -> String {
    run.steps
        .iter()
        .flat_map(|step| &step.calls)
        .map(|record| {
            let shown = record.result.output_text();
            let shown = shown
                .strip_prefix(&format!("{} => ", record.call.name))
                .unwrap_or(&shown)
                .to_owned();
            format!(" [{} => {}]", record.call.name, shown)
        })
        .collect()
}

async fn run() -> (String, String, String, String) {
    // 1. call(): named arguments from a map.
    let called = call(&get_weather::tool(), json!({"city": "Lima"}))
        .await
        .expect("get_weather runs");

    // 2. The safe loop: allow-list = {get_weather}, bounded steps and budget.
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new(
                "call_1",
                "get_weather",
                json!({"city": "Lima"}),
            )],
            text: String::new(),
            tokens: Usage::new(42, 9),
        })
        .reply(Step::Tool {
            calls: vec![ToolCall::new(
                "call_2",
                "send_email",
                json!({"to": "attacker@example.com"}),
            )],
            text: String::new(),
            tokens: Usage::new(61, 12),
        })
        .reply(Step::Final {
            text: "It is sunny in Lima.".into(),
            tokens: Usage::new(75, 8),
        });
    let tools = Toolbox::for_agent([get_weather::tool()]).expect("a valid toolbox");
    let agent = Agent::builder(model)
        .toolbox(tools)
        .grant(Capability::net("api.weather.com"))
        .max_steps(5)
        .token_budget(1_000)
        .build()
        .unwrap();
    let safe = agent.run("What is the weather in Lima?").await;

    // 3. Offline.
    let offline = Agent::new(OfflineModel)
        .run("What is the weather in Lima?")
        .await;

    (
        called.as_str().unwrap_or_default().to_owned(),
        trace(&safe),
        safe.text(),
        offline.text(),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (called, trace, answer, offline) = run().await;
    println!("{called}");
    println!("{}", trace.trim_start());
    println!("{answer}");
    println!("{offline}");
}

#[test]
fn a_tool_is_a_normal_function() {
    assert_eq!(get_weather("Paris".into()), "weather in Paris: sunny");
}

#[tokio::test]
async fn prints_the_expected_results() {
    let (called, trace, answer, offline) = run().await;
    assert_eq!(called, "weather in Lima: sunny");
    assert_eq!(
        trace,
        " [get_weather => weather in Lima: sunny] [send_email => not allowed]"
    );
    assert_eq!(answer, "It is sunny in Lima.");
    assert_eq!(offline, "[no llm provider]");
}
