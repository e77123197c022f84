//! Guardrails around an agent on the local model: an input guardrail that
//! refuses a denied topic before the model is asked, a tool-result guardrail
//! that redacts personal data a remote directory (marked `open_world`)
//! returns before the model reads it, and a PII guardrail on the answer.
//!
//! Run: `cargo run -p agentry --example guardrails` (after `agentry model
//! pull`; without the model the offline model answers).

mod support;

use std::sync::Arc;

use agentry::agent::{Agent, RunOutcome};
use agentry::guardrails::{Denied, Pii};
use agentry::model::{ChatModel, ToolChoice};
use agentry::tool::function;
use serde_json::{Value, json};
use support::{local_or_offline, print_calls};

/// The agent: one remote lookup, three guardrails.
fn agent(model: Arc<dyn ChatModel>) -> Agent {
    let mut directory = function("find_owner")
        .description("Find who owns an account in the company directory.")
        .arg::<String>("account", "The account name")
        .handler(|input: Value| {
            Ok::<_, String>(json!({
                "account": input["account"],
                "owner": "Ana Lopez",
                "email": "ana.lopez@example.com",
                "phone": "+44 20 7946 0958"
            }))
        })
        .build()
        .expect("a valid function");
    directory.hints.open_world = true;
    Agent::builder(model)
        .tool(directory)
        .first_tool_choice(ToolChoice::Required)
        .max_tool_rounds(1)
        .input_guardrail(
            Denied::words("no-credentials", ["password", "passcode"])
                .expect("valid words")
                .guardrail(),
        )
        .tool_result_guardrail(Pii::redact().guardrail())
        .output_guardrail(Pii::redact().guardrail())
        .build()
        .expect("a valid agent")
}

async fn run(model: Arc<dyn ChatModel>) -> (RunOutcome, RunOutcome) {
    let agent = agent(model);
    let refused = agent
        .run("What is the password of the billing account?")
        .await;
    println!("1. {}", refused.text());
    let answered = agent.run("Who owns the billing account?").await;
    print_calls(&answered.steps);
    println!("2. {}", answered.text());
    (refused, answered)
}

#[tokio::main]
async fn main() {
    run(local_or_offline().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn denied_topics_stop_and_personal_data_never_reaches_the_model() {
    if !support::local_model_present() {
        return;
    }
    let (refused, answered) = run(local_or_offline().await).await;
    let agentry::agent::Outcome::GuardrailTripped(tripped) = &refused.outcome else {
        panic!("{:?}", refused.outcome)
    };
    assert_eq!(tripped.guardrail, "no-credentials");
    assert!(refused.steps.is_empty(), "the model was never asked");
    let call = answered.calls().next().expect("the lookup was called");
    assert_eq!(
        call.result.output["email"], "[EMAIL]",
        "redacted before the model read it"
    );
    let seen = format!("{:?}", answered.messages);
    assert!(
        !seen.contains("ana.lopez@example.com") && !seen.contains("7946"),
        "{seen}"
    );
    assert!(
        !answered.text().contains("@example.com"),
        "{}",
        answered.text()
    );
}
