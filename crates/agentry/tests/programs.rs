//! Typed programs: inputs checked before the model is
//! called, answers checked against the output schema and asked for again
//! with the problems, tools through the agent's gate across steps, internal
//! fields dropped. Logic only, with a scripted model; `typed_program` and the
//! local-model tests run programs on the real model.

use std::sync::Arc;

use agentry::agent::RunError;
use agentry::model::{ModelError, ScriptedModel, Step, ToolChoice, Usage};
use agentry::program::{Program, ProgramError};
use agentry::tool::{Capability, ToolCall};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

fn answer(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(30, 10),
    }
}

/// Look up the refund policy of a plan.
#[agentry::tool(name = "policy", net = "policies.example.com")]
fn policy(plan: String) -> String {
    format!("{plan}: refunds within 30 days")
}

#[tokio::test]
async fn tools_run_through_the_gate_across_steps_before_the_answer() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(Step::Tool {
                calls: vec![
                    ToolCall::new("c1", "policy", json!({"plan": "pro"})),
                    ToolCall::new("c2", "delete_account", json!({})),
                ],
                text: String::new(),
                tokens: Usage::new(20, 8),
            })
            .reply(answer(
                r#"{"answer": "Yes, within 30 days.", "eligible": true}"#,
            )),
    );
    let program = Program::new(
        r#""Answer refund questions from the policy" question:string -> answer:string, eligible:boolean"#,
    )
    .unwrap()
    .tool(policy::tool())
    .configure(|agent| agent.grant(Capability::net("policies.example.com")));
    let run = program
        .run(
            &model,
            json!({"question": "Can a pro customer get a refund?"}),
        )
        .await
        .unwrap();
    assert_eq!(
        run.output,
        json!({"answer": "Yes, within 30 days.", "eligible": true})
    );
    assert_eq!((run.attempts, run.usage), (1, Usage::new(50, 18)));
    let results: Vec<_> = run.steps[0]
        .calls
        .iter()
        .map(|c| c.result.output.clone())
        .collect();
    assert_eq!(
        results,
        [
            json!("pro: refunds within 30 days"),
            json!("delete_account => not allowed")
        ]
    );

    let requests = model.requests();
    let system = requests[0].system.as_deref().unwrap();
    assert!(system.starts_with("Answer refund questions from the policy\n\nInput fields:\n- question (string)\n\nOutput fields:\n- answer (string)\n- eligible (boolean)\n"), "{system}");
    let format = requests[0].response_format.as_ref().unwrap();
    assert_eq!(format.schema, program.output_schema().clone());
    assert_eq!(
        serde_json::to_value(&requests[0].messages[0]).unwrap(),
        json!({"role": "user", "text": "question: Can a pro customer get a refund?"})
    );
    assert_eq!(requests[0].tools[0].name, "policy");
}

#[tokio::test]
async fn a_tool_whose_capability_is_not_granted_does_not_run() {
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("c1", "policy", json!({"plan": "pro"}))],
            text: String::new(),
            tokens: Usage::new(20, 8),
        })
        .reply(answer(r#"{"answer": "I could not check."}"#));
    let program = Program::new("question -> answer")
        .unwrap()
        .tool(policy::tool());
    let run = program
        .run(&model, json!({"question": "Refund?"}))
        .await
        .unwrap();
    assert_eq!(
        run.steps[0].calls[0].result.output,
        json!(
            "tool \"policy\" needs net(\"policies.example.com\"), which this agent does not grant"
        )
    );
}

#[tokio::test]
async fn answers_that_do_not_fit_are_retried_with_the_problems_then_given_up() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(answer("Sure! The answer is yes."))
            .reply(answer(r#"{"answer": 42}"#))
            .reply(answer(r#"{"answer": "yes", "mood": "sad"}"#)),
    );
    let program = Program::new(r#"question -> answer:string, mood:class "calm, angry""#).unwrap();
    let err = program
        .run(&model, json!({"question": "Refund?"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ProgramError::InvalidOutput {
            attempts: 3,
            problems: "- /mood: \"sad\" is not one of \"calm\" or \"angry\"".into(),
            answer: r#"{"answer": "yes", "mood": "sad"}"#.into(),
        }
    );
    // Each retry saw the conversation so far and what was wrong.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let last = serde_json::to_value(requests[2].messages.last().unwrap()).unwrap();
    assert_eq!(
        last["text"],
        "Your answer does not fit the output fields:\n- (root): \"mood\" is a required property\n- /answer: 42 is not of type \"string\"\nAnswer again with one JSON object holding the output fields, and nothing else."
    );
    assert_eq!(requests[2].messages.len(), 5);
    assert_eq!(
        serde_json::to_value(&requests[1].messages[2]).unwrap()["text"],
        "Your answer does not fit the output fields:\n- (root): the answer is not a JSON object (expected value at line 1 column 1)\nAnswer again with one JSON object holding the output fields, and nothing else."
    );

    // With no retries the first bad answer ends it.
    let once = Program::new("question -> answer").unwrap().retries(0);
    let err = once
        .run(
            &ScriptedModel::new().reply(answer("{}")),
            json!({"question": "?"}),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProgramError::InvalidOutput { attempts: 1, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn inputs_are_checked_before_the_model_is_called() {
    let model = ScriptedModel::new();
    let program = Program::new("question:string, limit?:number -> answer").unwrap();
    let err = program
        .run(&model, json!({"question": 7, "extra": true}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid inputs for the program:\n- /question: 7 is not of type \"string\"\n- (root): Additional properties are not allowed ('extra' was unexpected)"
    );
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn internal_fields_are_written_but_not_returned_and_formats_are_checked() {
    let model = ScriptedModel::new()
        .reply(answer(
            r#"{"reasoning": "It was bought last week.", "due": "next friday"}"#,
        ))
        .reply(answer(
            r#"{"reasoning": "It was bought last week.", "due": "2026-12-04"}"#,
        ));
    let program = Program::new("purchase:string -> reasoning!:string, due:date").unwrap();
    let run = program
        .run(&model, json!({"purchase": "a kettle, 2026-11-20"}))
        .await
        .unwrap();
    assert_eq!(run.output, json!({"due": "2026-12-04"}));
    assert_eq!(run.attempts, 2, "\"next friday\" is not a date");
}

#[tokio::test]
async fn a_run_without_an_answer_is_a_run_error() {
    let program = Program::new("question -> answer").unwrap();
    let failing = ScriptedModel::new().fail(ModelError::Provider("overloaded".into()));
    assert_eq!(
        program
            .run(&failing, json!({"question": "?"}))
            .await
            .unwrap_err(),
        ProgramError::Run(RunError::Model(ModelError::Provider("overloaded".into())))
    );
    let looping = ScriptedModel::new().respond(|_| {
        Ok(Step::Tool {
            calls: vec![ToolCall::new("c", "nothing", json!({}))],
            text: String::new(),
            tokens: Usage::new(1, 1),
        })
    });
    let looping = Arc::new(looping);
    let program = program.configure(|agent| agent.max_steps(2).first_tool_choice(ToolChoice::Auto));
    // `respond` answers once; the second step finds the script empty.
    let err = program
        .run(&looping, json!({"question": "?"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ProgramError::Run(RunError::Model(ModelError::Config(_)))
        ),
        "{err:?}"
    );
}

/// A customer's question.
#[derive(Serialize, JsonSchema)]
struct Ticket {
    /// What the customer wrote.
    message: String,
}

/// How to route it.
#[derive(Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Routing {
    /// The team that should answer.
    team: Team,
    /// How urgent it is, 1 to 5.
    #[schemars(range(min = 1, max = 5))]
    urgency: u8,
}

#[derive(Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Team {
    Billing,
    Support,
}

#[tokio::test]
async fn typed_programs_take_and_give_rust_values() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(answer(r#"{"team": "billing", "urgency": 9}"#))
            .reply(answer(r#"{"team": "billing", "urgency": 4}"#)),
    );
    let program = Program::<Ticket, Routing>::typed().description("Route the ticket.");
    let routing = program
        .forward(
            &model,
            Ticket {
                message: "I was charged twice!".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        routing,
        Routing {
            team: Team::Billing,
            urgency: 4
        }
    );
    let system = program.system_prompt();
    assert!(
        system.contains("- message (string): What the customer wrote."),
        "{system}"
    );
    assert!(
        system.contains("- team (one of \"billing\", \"support\"): The team that should answer."),
        "{system}"
    );
    assert!(
        system.contains("- urgency (integer): How urgent it is, 1 to 5."),
        "{system}"
    );
    let retry = serde_json::to_value(model.requests()[1].messages.last().unwrap()).unwrap();
    assert!(
        retry["text"]
            .as_str()
            .unwrap()
            .contains("- /urgency: 9 is greater than the maximum of 5"),
        "{retry}"
    );
}
