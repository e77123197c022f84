//! The relevance gate, with a scripted model and a keyword embedder: a
//! request no tool is near, or nearer small talk, makes step 1 answer in
//! text (`ToolChoice::None`); one a tool is clearly near makes it call
//! (`ToolChoice::Required`, with a call floor); a follow-up is read with
//! the turn before it; later steps, skills or discovery, and an embedder
//! fault leave the choice alone; the run records what the gate decided.
use std::sync::Arc;

use agentry::BoxFuture;
use agentry::agent::{Agent, AnswerCheck, FirstStep, RelevanceGate, RunOutcome};
use agentry::embed::{EmbedError, Embedder, KeywordEmbedder};
use agentry::model::{Message, ScriptedModel, Step, ToolChoice, Usage};
use agentry::tool::{Tool, ToolCall, ToolHints, function};
use serde_json::{Value, json};

fn weather() -> Tool {
    function("weather")
        .description("The weather in a city.")
        .handler(|_: Value| Ok::<_, String>("sunny"))
        .build()
        .unwrap()
}

fn done() -> Step {
    Step::Final {
        text: "done".into(),
        tokens: Usage::new(1, 1),
    }
}

fn call_weather() -> Step {
    Step::Tool {
        calls: vec![ToolCall::new("1", "utils.weather", json!({}))],
        text: String::new(),
        tokens: Usage::new(1, 1),
    }
}

fn gate() -> RelevanceGate {
    RelevanceGate::new(KeywordEmbedder::new(["weather", "rectangle"]), 0.5)
}

fn choices(model: &ScriptedModel) -> Vec<ToolChoice> {
    model
        .requests()
        .iter()
        .map(|r| r.tool_choice.clone())
        .collect()
}

#[tokio::test]
async fn a_request_no_tool_is_near_is_answered_in_text() {
    let model = Arc::new(ScriptedModel::new().reply(done()));
    let run = Agent::builder(model.clone())
        .tool(weather())
        .relevance_gate(gate())
        .build()
        .unwrap()
        .run("What is the area of a rectangle 5 by 7?")
        .await;
    assert_eq!(run.text(), "done");
    assert_eq!(choices(&model), [ToolChoice::None]);
}

#[tokio::test]
async fn a_request_a_tool_fits_may_call_and_later_steps_are_not_gated() {
    let model = Arc::new(ScriptedModel::new().reply(call_weather()).reply(done()));
    let run = Agent::builder(model.clone())
        .tool(weather())
        .relevance_gate(gate())
        .build()
        .unwrap()
        .run("What is the weather in Lima?")
        .await;
    assert_eq!(run.steps[0].calls[0].result.output, json!("sunny"));
    assert_eq!(choices(&model), [ToolChoice::Auto, ToolChoice::Auto]);
}

#[tokio::test]
async fn with_skills_or_discovery_the_gate_stands_aside() {
    let model = Arc::new(ScriptedModel::new().reply(done()));
    Agent::builder(model.clone())
        .tool(weather())
        .discovery(true)
        .relevance_gate(gate())
        .build()
        .unwrap()
        .run("What is the area of a rectangle?")
        .await;
    assert_eq!(choices(&model), [ToolChoice::Auto]);
}

/// An embedder that always fails.
struct Broken;

impl Embedder for Broken {
    fn model_id(&self) -> &str {
        "broken"
    }
    fn dimensions(&self) -> usize {
        2
    }
    fn embed<'a>(&'a self, _: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async { Err(EmbedError::failed("no model")) })
    }
}

#[tokio::test]
async fn an_embedder_fault_leaves_calls_allowed() {
    let model = Arc::new(ScriptedModel::new().reply(call_weather()).reply(done()));
    let run = Agent::builder(model.clone())
        .tool(weather())
        .relevance_gate(RelevanceGate::new(Broken, 0.5))
        .build()
        .unwrap()
        .run("What is the area of a rectangle?")
        .await;
    assert_eq!(run.steps[0].calls[0].result.output, json!("sunny"));
    assert_eq!(choices(&model)[0], ToolChoice::Auto);
}

/// A gate that knows small talk ("tell me a joke") and makes step 1 call
/// when a tool is clearly nearer than it.
fn gate_with_small_talk() -> RelevanceGate {
    RelevanceGate::new(KeywordEmbedder::new(["weather", "rectangle", "joke"]), 0.5)
        .small_talk(["tell me a joke"], 0.0)
        .call_floor(0.6)
}

#[tokio::test]
async fn small_talk_nearer_than_every_tool_is_answered_in_text_and_recorded() {
    let model = Arc::new(ScriptedModel::new().reply(done()));
    let run = Agent::builder(model.clone())
        .tool(weather())
        .relevance_gate(gate_with_small_talk())
        .build()
        .unwrap()
        .run("A joke about the weather")
        .await;
    assert_eq!(run.text(), "done");
    assert_eq!(choices(&model), [ToolChoice::None]);
    let relevance = run.relevance.unwrap();
    assert_eq!(relevance.first_step, FirstStep::Answer);
    assert!(
        relevance.small_talk.unwrap() > relevance.tool,
        "{relevance:?}"
    );
}

#[tokio::test]
async fn a_tool_clearly_nearer_than_small_talk_must_be_called_at_step_1_only() {
    let model = Arc::new(ScriptedModel::new().reply(call_weather()).reply(done()));
    let run = Agent::builder(model.clone())
        .tool(weather())
        .relevance_gate(gate_with_small_talk())
        .build()
        .unwrap()
        .run("What is the weather in Lima?")
        .await;
    assert_eq!(run.steps[0].calls[0].result.output, json!("sunny"));
    assert_eq!(choices(&model), [ToolChoice::Required, ToolChoice::Auto]);
    assert_eq!(run.relevance.unwrap().first_step, FirstStep::Call);
    // Between the floor and the call floor the model still chooses.
    let model = Arc::new(ScriptedModel::new().reply(done()));
    let gate = gate_with_small_talk().call_floor(1.5);
    let run = Agent::builder(model.clone())
        .tool(weather())
        .relevance_gate(gate)
        .build()
        .unwrap()
        .run("What is the weather in Lima?")
        .await;
    assert_eq!(choices(&model), [ToolChoice::Auto]);
    assert_eq!(run.relevance.unwrap().first_step, FirstStep::Choose);
}

/// "And in Quito?" after a question about the weather in Lima.
fn follow_up() -> Vec<Message> {
    vec![
        Message::user("What is the weather in Lima?"),
        Message::assistant("Sunny."),
        Message::user("And in Quito?"),
    ]
}

/// Runs `messages` through an agent with the weather tool and `gate`,
/// the model replying `steps`; the run and the model's tool choices.
async fn run_gated(
    gate: RelevanceGate,
    messages: Vec<Message>,
    steps: Vec<Step>,
) -> (agentry::agent::RunOutcome, Vec<ToolChoice>) {
    let model = Arc::new(
        steps
            .into_iter()
            .fold(ScriptedModel::new(), ScriptedModel::reply),
    );
    let run = Agent::builder(model.clone())
        .tool(weather())
        .relevance_gate(gate)
        .build()
        .unwrap()
        .run_messages(messages)
        .await;
    (run, choices(&model))
}

#[tokio::test]
async fn a_short_follow_up_is_read_with_the_turn_before_it() {
    let steps = vec![call_weather(), done()];
    let (run, choices) = run_gated(gate_with_small_talk(), follow_up(), steps).await;
    // It goes on with the question before it: that question's tool is called.
    assert_eq!(choices[0], ToolChoice::Tool("utils.weather".into()));
    assert_eq!(run.relevance.unwrap().first_step, FirstStep::Call);
    // Asked alone, the follow-up is near no tool.
    let alone = vec![Message::user("And in Quito?")];
    let (run, choices) = run_gated(gate_with_small_talk(), alone, vec![done()]).await;
    assert_eq!(choices, [ToolChoice::None]);
    assert_eq!(run.relevance.unwrap().first_step, FirstStep::Answer);
}

#[tokio::test]
async fn with_a_call_floor_a_follow_up_that_goes_on_with_a_request_calls() {
    // The follow-up is near the weather tool only through the turn before
    // it; a call floor above every margin still makes step 1 call it.
    let floored = gate_with_small_talk().call_floor(1.5);
    let (run, choices) = run_gated(floored, follow_up(), vec![call_weather(), done()]).await;
    assert_eq!(choices[0], ToolChoice::Tool("utils.weather".into()));
    let relevance = run.relevance.unwrap();
    assert_eq!(relevance.continues.as_deref(), Some("utils.weather"));
    // Without a call floor the model chooses.
    let (_, choices) = run_gated(gate(), follow_up(), vec![done()]).await;
    assert_eq!(choices, [ToolChoice::Auto]);
}

#[tokio::test]
async fn without_a_gate_nothing_is_recorded() {
    let model = Arc::new(ScriptedModel::new().reply(done()));
    let run = Agent::builder(model.clone())
        .tool(weather())
        .build()
        .unwrap()
        .run("What is the weather in Lima?")
        .await;
    assert_eq!(run.relevance, None);
    assert_eq!(choices(&model), [ToolChoice::Auto]);
}

/// A read-only tool that always returns `output`.
fn read_only(name: &str, description: &str, output: &'static str) -> Tool {
    function(name)
        .description(description)
        .hints(ToolHints {
            read_only: true,
            ..ToolHints::default()
        })
        .handler(move |_: Value| Ok::<_, String>(output))
        .build()
        .unwrap()
}

fn price() -> Tool {
    read_only("price", "The share price of a stock.", "42.0")
}

fn call_price() -> Step {
    Step::Tool {
        calls: vec![ToolCall::new("2", "utils.price", json!({}))],
        text: String::new(),
        tokens: Usage::new(1, 1),
    }
}

fn email() -> Tool {
    function("email")
        .description("Send an email.")
        .handler(|_: Value| Ok::<_, String>("sent"))
        .build()
        .unwrap()
}

fn read_only_weather() -> Tool {
    read_only("weather", "The weather in a city.", "sunny")
}

fn parts_gate() -> RelevanceGate {
    RelevanceGate::new(KeywordEmbedder::new(["weather", "price", "email"]), 0.5)
}

#[tokio::test]
async fn each_part_of_a_request_that_asks_two_things_gets_its_call() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call_weather())
            .reply(call_price())
            .reply(done()),
    );
    let run = Agent::builder(model.clone())
        .tool(read_only_weather())
        .tool(price())
        .relevance_gate(parts_gate())
        .max_tool_rounds(1)
        .build()
        .unwrap()
        .run("What is the weather in Lima and the price of ACME?")
        .await;
    assert_eq!(
        run.relevance.as_ref().unwrap().part_tools,
        ["utils.weather", "utils.price"]
    );
    // Step 1 called the weather; the price part is called next, past the
    // limit of one tool round; then the answer.
    assert_eq!(
        choices(&model),
        [
            ToolChoice::Auto,
            ToolChoice::Tool("utils.price".into()),
            ToolChoice::None
        ]
    );
    assert_eq!(run.steps[1].calls[0].result.output, json!("42.0"));
    assert_eq!(run.text(), "done");
}

#[tokio::test]
async fn a_part_whose_tool_changes_things_is_left_to_the_model() {
    let model = Arc::new(ScriptedModel::new().reply(call_weather()).reply(done()));
    let run = Agent::builder(model.clone())
        .tool(read_only_weather())
        .tool(email())
        .relevance_gate(parts_gate())
        .build()
        .unwrap()
        .run("Check the weather in Lima and email Ana about it")
        .await;
    assert_eq!(
        run.relevance.as_ref().unwrap().part_tools,
        ["utils.weather", "utils.email"]
    );
    assert_eq!(choices(&model), [ToolChoice::Auto, ToolChoice::Auto]);
    // One request, one part: nothing is added after its call.
    let model = Arc::new(ScriptedModel::new().reply(call_weather()).reply(done()));
    let run = Agent::builder(model.clone())
        .tool(read_only_weather())
        .tool(price())
        .relevance_gate(parts_gate())
        .build()
        .unwrap()
        .run("What is the weather in Lima and Quito?")
        .await;
    assert!(run.relevance.unwrap().part_tools.is_empty());
    assert_eq!(choices(&model), [ToolChoice::Auto, ToolChoice::Auto]);
}

/// A run of an agent with `tools`, the parts gate and one tool round.
async fn run_in_parts(model: &Arc<ScriptedModel>, tools: Vec<Tool>, request: &str) -> RunOutcome {
    let mut builder = Agent::builder(model.clone())
        .relevance_gate(parts_gate())
        .max_tool_rounds(1);
    for tool in tools {
        builder = builder.tool(tool);
    }
    builder.build().unwrap().run(request).await
}

fn call_weather_in(id: &str, city: &str) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new(id, "utils.weather", json!({ "city": city }))],
        text: String::new(),
        tokens: Usage::new(1, 1),
    }
}

#[tokio::test]
async fn a_part_the_call_left_out_is_asked_of_the_same_tool_by_name() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call_weather_in("1", "Lima"))
            .reply(call_weather_in("2", "Quito"))
            .reply(done()),
    );
    let run = run_in_parts(
        &model,
        vec![read_only_weather(), price()],
        "What is the weather in Lima and the weather in Quito?",
    )
    .await;
    let relevance = run.relevance.as_ref().unwrap();
    let parts: Vec<&str> = relevance.parts.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(
        parts,
        ["What is the weather in Lima", "the weather in Quito"]
    );
    assert!(relevance.part_tools.is_empty(), "one tool for both parts");
    // Step 1 took Lima; the weather is called again, the part it left out
    // named to the model in that step's request only; then the answer.
    assert_eq!(
        choices(&model),
        [
            ToolChoice::Auto,
            ToolChoice::Tool("utils.weather".into()),
            ToolChoice::None
        ]
    );
    let requests = model.requests();
    assert_eq!(
        requests[1].messages.last(),
        Some(&Message::user(
            "Now this part of my request: the weather in Quito"
        ))
    );
    assert!(
        !requests[2]
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { text } if text.starts_with("Now this part"))),
        "the note is not kept in the conversation"
    );
    assert_eq!(run.steps[1].calls[0].call.input, json!({"city": "Quito"}));
    assert_eq!(run.text(), "done");
}

#[tokio::test]
async fn with_parts_for_two_tools_a_part_left_out_of_one_is_still_asked() {
    let both = Step::Tool {
        calls: vec![
            ToolCall::new("1", "utils.weather", json!({"city": "Lima"})),
            ToolCall::new("2", "utils.price", json!({"symbol": "ACME"})),
        ],
        text: String::new(),
        tokens: Usage::new(1, 1),
    };
    let model = Arc::new(
        ScriptedModel::new()
            .reply(both)
            .reply(call_weather_in("3", "Quito"))
            .reply(done()),
    );
    let run = run_in_parts(
        &model,
        vec![read_only_weather(), price()],
        "The weather in Lima and the weather in Quito and the price of ACME",
    )
    .await;
    assert_eq!(
        run.relevance.as_ref().unwrap().part_tools,
        ["utils.weather", "utils.price"]
    );
    assert_eq!(
        choices(&model),
        [
            ToolChoice::Auto,
            ToolChoice::Tool("utils.weather".into()),
            ToolChoice::None
        ]
    );
    assert_eq!(
        model.requests()[1].messages.last(),
        Some(&Message::user(
            "Now this part of my request: the weather in Quito"
        ))
    );
}

#[tokio::test]
async fn parts_one_call_took_or_none_did_are_not_asked_again() {
    // One call took both cities: both parts are answered.
    let both = Step::Tool {
        calls: vec![ToolCall::new(
            "1",
            "utils.weather",
            json!({"city": "Lima", "also": ["Quito"]}),
        )],
        text: String::new(),
        tokens: Usage::new(1, 1),
    };
    // No call took either part's values: nothing tells the parts apart.
    for first in [both, call_weather()] {
        let model = Arc::new(ScriptedModel::new().reply(first).reply(done()));
        let run = run_in_parts(
            &model,
            vec![read_only_weather()],
            "What is the weather in Lima and the weather in Quito?",
        )
        .await;
        assert_eq!(choices(&model), [ToolChoice::Auto, ToolChoice::None]);
        assert_eq!(run.text(), "done");
    }
    // A part nearer small talk than its tool ("thanks Ana") is no request.
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call_weather_in("1", "Lima"))
            .reply(done()),
    );
    let talk_gate = RelevanceGate::new(
        KeywordEmbedder::new(["weather", "price", "email", "thanks"]),
        0.5,
    )
    .small_talk(["thanks"], -0.5);
    let run = Agent::builder(model.clone())
        .tool(read_only_weather())
        .relevance_gate(talk_gate)
        .max_tool_rounds(1)
        .build()
        .unwrap()
        .run("What is the weather in Lima and thanks Ana")
        .await;
    let parts = &run.relevance.as_ref().unwrap().parts;
    assert_eq!(parts[1].text, "thanks Ana");
    assert!(parts[1].similarity - parts[1].small_talk.unwrap() < -0.5);
    assert_eq!(choices(&model), [ToolChoice::Auto, ToolChoice::None]);
    // A part without a value of its own ("show me the forecast") is no
    // request the call left out.
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call_weather_in("1", "Lima"))
            .reply(done()),
    );
    run_in_parts(
        &model,
        vec![read_only_weather()],
        "What is the weather in Lima and the weather forecast?",
    )
    .await;
    assert_eq!(choices(&model), [ToolChoice::Auto, ToolChoice::None]);
}

#[tokio::test]
async fn the_answer_to_a_request_in_parts_is_read_against_every_part() {
    let weather_21 = read_only("weather", "The weather in a city.", "21 C, sunny");
    let answer = Step::Final {
        text: "ACME is at 42.0.".into(),
        tokens: Usage::new(1, 1),
    };
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call_weather())
            .reply(call_price())
            .reply(answer),
    );
    let run = Agent::builder(model.clone())
        .tool(weather_21)
        .tool(price())
        .relevance_gate(parts_gate())
        .check_answers(AnswerCheck::Quote)
        .build()
        .unwrap()
        .run("What is the weather in Lima and the price of ACME?")
        .await;
    // The answer states the price, from step 2, and nothing of the
    // weather, from step 1: the weather is quoted after it.
    assert_eq!(
        run.text(),
        "ACME is at 42.0.\n\nThe tools returned:\nutils.weather: 21 C, sunny"
    );
}
