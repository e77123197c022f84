//! The safe loop over a real HTTP provider: the agent sends tools, gets two
//! parallel calls back, runs them (one tool fetching over the guarded HTTP
//! client), sends the results in OpenAI's native shape, and gets the answer.

mod support;

use agentry::agent::{Agent, Outcome};
use agentry::model::Usage;
use agentry::net::HttpClient;
use agentry::tool::{Capability, ToolContext, Toolbox};
use agentry_providers::OpenAiCompatible;
use serde_json::json;
use support::{Reply, fixture, serve};

static WEATHER_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Current weather for a city.
#[agentry::tool(name = "weather::get", net = "http://127.0.0.1:*", concurrency_safe)]
pub async fn get_weather(ctx: &ToolContext, city: String) -> Result<String, String> {
    let url = format!("{}/{city}", WEATHER_URL.get().unwrap());
    let response = HttpClient::for_context(ctx)
        .get(&url)
        .await
        .map_err(|e| e.to_string())?;
    response.text().await.map_err(|e| e.to_string())
}

#[tokio::test]
async fn the_agent_loop_runs_over_a_streaming_provider() {
    let weather = serve(vec![
        Reply::Text("sunny".into()),
        Reply::Text("rainy".into()),
    ])
    .await;
    WEATHER_URL.set(weather.base_url.clone()).unwrap();
    let provider = serve(vec![
        Reply::Sse {
            body: fixture("openai/parallel_tool_calls.sse"),
            cut: false,
        },
        Reply::Sse {
            body: fixture("openai/text.sse"),
            cut: false,
        },
    ])
    .await;
    let model = OpenAiCompatible::new(
        format!("{}/v1", provider.base_url),
        Some("sk-test".into()),
        "gpt-4o-mini",
    );
    let run = Agent::builder(model)
        .toolbox(Toolbox::for_agent([get_weather::tool()]).unwrap())
        .grant(Capability::net("http://127.0.0.1:*"))
        .system("You are a weather bot.")
        .build()
        .unwrap()
        .run("Weather in Paris and Tokyo?")
        .await;

    assert_eq!(run.outcome, Outcome::Final("It is sunny in Lima.".into()));
    assert_eq!(run.usage, Usage::new(84 + 57, 47 + 6));
    let outputs: Vec<_> = run.steps[0]
        .calls
        .iter()
        .map(|c| c.result.output.clone())
        .collect();
    assert_eq!(outputs.len(), 2);
    let mut fetched: Vec<String> = weather.requests().iter().map(|r| r.path.clone()).collect();
    fetched.sort();
    assert_eq!(fetched, ["/Paris", "/Tokyo"]);

    let second = provider.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        5,
        "system, user, assistant with calls, two tool messages"
    );
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["name"],
        "weather__get"
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_8KcXQp2h1Zl3");
    assert_eq!(messages[4]["tool_call_id"], "call_Vq93LmT0aB7e");
    let contents = [
        messages[3]["content"].clone(),
        messages[4]["content"].clone(),
    ];
    assert!(
        contents.contains(&json!("sunny")) && contents.contains(&json!("rainy")),
        "{contents:?}"
    );
}
