//! Answers read against the tool results they rest on
//! (`AgentBuilder::check_answers`), with a scripted model: an answer that
//! agrees ends the run; with `AskAgain` one that contradicts a result is
//! asked again once, the disagreement named, the question asked without
//! tools, and a second disagreement is replaced by the results, quoted; an
//! answer that only left the results out keeps its text with the results
//! after it; `Quote` quotes at once. Off, every answer stands; a streamed
//! run shows the repair.
use std::sync::Arc;

use agentry::agent::{Agent, AgentEvent, AnswerCheck};
use agentry::model::{Message, ScriptedModel, Step, ToolChoice, Usage};
use agentry::tool::{Tool, ToolCall, function};
use futures_util::StreamExt;
use serde_json::{Value, json};

fn convert() -> Tool {
    function("convert_units")
        .description("Convert a value between units.")
        .handler(|_: Value| Ok::<_, String>("1.8288 m"))
        .build()
        .unwrap()
}

fn call() -> Step {
    Step::Tool {
        calls: vec![ToolCall::new("1", "utils.convert_units", json!({}))],
        text: String::new(),
        tokens: Usage::new(1, 1),
    }
}

fn say(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(1, 1),
    }
}

fn agent(model: &Arc<ScriptedModel>, check: AnswerCheck) -> Agent {
    Agent::builder(model.clone())
        .tool(convert())
        .check_answers(check)
        .build()
        .unwrap()
}

const ASKED: &str = "How tall is 6 feet in meters?";

#[tokio::test]
async fn an_answer_that_agrees_ends_the_run() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call())
            .reply(say("About 1.83 m.")),
    );
    let run = agent(&model, AnswerCheck::AskAgain).run(ASKED).await;
    assert_eq!(run.text(), "About 1.83 m.");
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn a_contradiction_is_asked_again_and_the_second_answer_stands() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call())
            .reply(say("6 feet is 18.288 meters."))
            .reply(say("6 feet is 1.8288 meters.")),
    );
    let run = agent(&model, AnswerCheck::AskAgain).run(ASKED).await;
    assert_eq!(run.text(), "6 feet is 1.8288 meters.");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let reask = &requests[2];
    assert_eq!(
        reask.tool_choice,
        ToolChoice::None,
        "the re-ask takes no calls"
    );
    let Some(Message::User { text }) = reask.messages.last() else {
        panic!("the re-ask ends with the check: {:?}", reask.messages)
    };
    assert_eq!(
        text,
        "Your answer says 18.288, which is not what the tools returned. The tool results \
         were:\nutils.convert_units: 1.8288 m\nAnswer my request again in one or two sentences, using \
         exactly these values."
    );
    // The flagged answer is a step of its own; the conversation handed back
    // holds the request, the call, its result and the answer that stood.
    let texts: Vec<&str> = run.steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts,
        ["", "6 feet is 18.288 meters.", "6 feet is 1.8288 meters."]
    );
    assert_eq!(run.messages.len(), 4, "{:?}", run.messages);
    assert_eq!(
        run.messages.last(),
        Some(&Message::assistant("6 feet is 1.8288 meters."))
    );
}

#[tokio::test]
async fn a_second_contradiction_gives_way_to_the_results_quoted() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call())
            .reply(say("6 feet is 18.288 meters."))
            .reply(say("It is 18.29 meters.")),
    );
    let run = agent(&model, AnswerCheck::AskAgain).run(ASKED).await;
    assert_eq!(
        run.text(),
        "The tools returned:\nutils.convert_units: 1.8288 m"
    );
}

#[tokio::test]
async fn an_answer_that_leaves_the_results_out_keeps_its_text_with_them_after() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call())
            .reply(say(
                "The convert_units function returns the height in meters.",
            ))
            .reply(say("I converted it for you.")),
    );
    let run = agent(&model, AnswerCheck::AskAgain).run(ASKED).await;
    assert_eq!(
        run.text(),
        "I converted it for you.\n\nThe tools returned:\nutils.convert_units: 1.8288 m"
    );
}

#[tokio::test]
async fn with_no_steps_left_the_first_disagreement_is_repaired_at_once() {
    let model = Arc::new(ScriptedModel::new().reply(call()).reply(say("18.288 m")));
    let run = Agent::builder(model.clone())
        .tool(convert())
        .check_answers(AnswerCheck::AskAgain)
        .max_steps(2)
        .build()
        .unwrap()
        .run(ASKED)
        .await;
    assert_eq!(
        run.text(),
        "The tools returned:\nutils.convert_units: 1.8288 m"
    );
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn quoting_alone_asks_nothing_again() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call())
            .reply(say("The convert_units function returns the height.")),
    );
    let run = agent(&model, AnswerCheck::Quote).run(ASKED).await;
    assert_eq!(
        run.text(),
        "The convert_units function returns the height.\n\nThe tools returned:\nutils.convert_units: 1.8288 m"
    );
    assert_eq!(model.requests().len(), 2);
    assert_eq!(run.steps.len(), 2);
}

#[tokio::test]
async fn off_by_default_every_answer_stands() {
    let model = Arc::new(ScriptedModel::new().reply(call()).reply(say("18.288 m")));
    let run = Agent::builder(model.clone())
        .tool(convert())
        .build()
        .unwrap()
        .run(ASKED)
        .await;
    assert_eq!(run.text(), "18.288 m");
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn a_failed_call_leaves_the_answer_alone() {
    let failing = function("convert_units")
        .description("Convert a value between units.")
        .handler(|_: Value| Err::<String, _>("unknown unit 'ft2', 12 units known".to_owned()))
        .build()
        .unwrap();
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call())
            .reply(say("The tool did not know the unit.")),
    );
    let run = Agent::builder(model.clone())
        .tool(failing)
        .check_answers(AnswerCheck::AskAgain)
        .build()
        .unwrap()
        .run(ASKED)
        .await;
    assert_eq!(run.text(), "The tool did not know the unit.");
}

#[tokio::test]
async fn a_streamed_run_shows_the_repair_as_text() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call())
            .reply(say("18.288 m"))
            .reply(say("18.288 m")),
    );
    let agent = agent(&model, AnswerCheck::AskAgain);
    let events: Vec<AgentEvent> = agent.stream(ASKED).collect().await;
    let repair = events.iter().find_map(|event| match event {
        AgentEvent::TextDelta { step: 3, text } if text.contains("returned") => Some(text.clone()),
        _ => None,
    });
    assert_eq!(
        repair.as_deref(),
        Some("\n\nThe tools returned:\nutils.convert_units: 1.8288 m")
    );
    let Some(AgentEvent::Final { run }) = events.last() else {
        panic!("the stream ends with the run")
    };
    assert_eq!(
        run.text(),
        "The tools returned:\nutils.convert_units: 1.8288 m"
    );
}
