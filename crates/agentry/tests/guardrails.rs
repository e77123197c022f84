//! Guardrails in the loop: an input guardrail that trips before the model is
//! asked, one that rewrites what the model reads; an output guardrail that
//! redacts, one that asks again (JSON Schema) and trips past its retries;
//! tool-result guardrails on a tool source's results (redacted before the
//! model, the audit log and the journal see them) and not on the agent's own
//! tools. Scripted model: loop logic.

use std::sync::{Arc, Mutex};

use agentry::BoxFuture;
use agentry::agent::{Agent, GuardrailStage, GuardrailTripped, Outcome};
use agentry::guardrails::{Denied, Pii, json_schema};
use agentry::journal::{InMemoryJournal, RunEntry, RunJournal};
use agentry::model::{Message, ScriptedModel, Step, Usage};
use agentry::tool::{Tool, ToolCall, ToolSource, function};
use serde_json::{Value, json};

fn answer(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(1, 1),
    }
}

fn call(name: &str) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new("c1", name, json!({}))],
        text: String::new(),
        tokens: Usage::new(1, 1),
    }
}

fn user_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// An agent that answers "noted", whose input guardrails refuse weapons and
/// redact personal data; and its model, to read what it was asked.
fn guarding_input() -> (Arc<ScriptedModel>, Agent) {
    let model = Arc::new(ScriptedModel::new().reply(answer("noted")));
    let agent = Agent::builder(model.clone())
        .input_guardrail(Denied::words("no-weapons", ["weapon"]).unwrap().guardrail())
        .input_guardrail(Pii::redact().guardrail())
        .build()
        .unwrap();
    (model, agent)
}

#[tokio::test]
async fn an_input_guardrail_trips_before_the_model_or_rewrites_what_it_reads() {
    let (model, agent) = guarding_input();
    let tripped = agent.run("How do I build a weapon?").await;
    assert_eq!(
        tripped.outcome,
        Outcome::GuardrailTripped(GuardrailTripped {
            guardrail: "no-weapons".into(),
            stage: GuardrailStage::Input,
            reason: "mentions a denied topic: weapon".into(),
        })
    );
    assert!(model.requests().is_empty(), "the model was never asked");
    assert_eq!(tripped.outcome.kind(), "guardrail_tripped");

    let run = agent.run("Remember my card 4111 1111 1111 1111.").await;
    assert_eq!(run.outcome, Outcome::Final("noted".into()));
    assert_eq!(
        user_texts(&model.requests()[0].messages),
        ["Remember my card [CARD]."],
        "the model read the redacted message"
    );
}

#[tokio::test]
async fn an_output_guardrail_redacts_or_asks_again_then_trips() {
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let model = Arc::new(
        ScriptedModel::new()
            .reply(answer("Lyon"))
            .reply(answer("```json\n{\"city\": \"Lyon\"}\n```")),
    );
    let agent = Agent::builder(model.clone())
        .output_guardrail(json_schema(schema.clone(), 1).unwrap())
        .build()
        .unwrap();
    let run = agent.run("Which city? Answer in JSON.").await;
    assert_eq!(run.outcome, Outcome::Final(r#"{"city":"Lyon"}"#.into()));
    let second = &model.requests()[1].messages;
    let told = user_texts(second).pop().unwrap();
    assert!(
        told.starts_with("Your answer was not accepted: the answer must be JSON"),
        "{told}"
    );

    let stubborn = Arc::new(
        ScriptedModel::new()
            .reply(answer("Lyon"))
            .reply(answer("Paris")),
    );
    let agent = Agent::builder(stubborn)
        .output_guardrail(json_schema(schema, 1).unwrap())
        .build()
        .unwrap();
    let run = agent.run("Which city?").await;
    let Outcome::GuardrailTripped(tripped) = run.outcome else {
        panic!("{:?}", run.outcome)
    };
    assert_eq!(
        (tripped.guardrail.as_str(), tripped.stage),
        ("json-schema", GuardrailStage::Output)
    );

    let redacting = Agent::builder(ScriptedModel::new().reply(answer("Mail ana@example.com")))
        .output_guardrail(Pii::redact().guardrail())
        .build()
        .unwrap();
    assert_eq!(
        redacting.run("Who?").await.outcome,
        Outcome::Final("Mail [EMAIL]".into())
    );
}

/// A tool source (an MCP server, say) whose one tool returns personal data.
struct Remote;
impl ToolSource for Remote {
    fn name(&self) -> &str {
        "remote"
    }
    fn tools(&self) -> BoxFuture<'_, Result<Vec<Tool>, String>> {
        let tool = function("lookup")
            .namespace("remote")
            .handler(|_: Value| {
                Ok::<_, String>("The owner is ana@example.com, IBAN DE89 3704 0044 0532 0130 00.")
            })
            .build()
            .unwrap();
        Box::pin(async move { Ok(vec![tool]) })
    }
    fn changed(&self) -> bool {
        false
    }
}

#[tokio::test]
async fn untrusted_results_are_redacted_before_the_model_and_the_journal_see_them() {
    let own = function("whoami")
        .handler(|_: Value| Ok::<_, String>("me@example.com"))
        .build()
        .unwrap();
    // A tool that reaches the web (an OpenAPI operation's hints say so too).
    let mut page = function("page")
        .handler(|_: Value| Ok::<_, String>("written by bo@example.com"))
        .build()
        .unwrap();
    page.hints.open_world = true;
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call("remote.lookup"))
            .reply(call("utils.whoami"))
            .reply(call("utils.page"))
            .reply(answer("done")),
    );
    let agent = Agent::builder(model.clone())
        .tool(own)
        .tool(page)
        .tool_source(Arc::new(Remote))
        .tool_result_guardrail(Pii::redact().guardrail())
        .build()
        .unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let run = agent
        .durable(journal.clone())
        .start("Who owns it?")
        .await
        .unwrap();
    let entries = journal.entries(&run.id).await.unwrap();
    let results: Vec<Value> = entries
        .iter()
        .filter_map(|entry| match entry {
            RunEntry::CallFinished { result, .. } => Some(result.output.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            json!("The owner is [EMAIL], IBAN [IBAN]."),
            json!("me@example.com"),
            json!("written by [EMAIL]")
        ],
        "the source's and the open-world tool's results are redacted, the agent's own tool's is not"
    );
    let seen = format!("{:?}", model.requests()[1].messages);
    assert!(!seen.contains("ana@example.com") && seen.contains("[EMAIL]"));

    // A tripping tool-result guardrail withholds the result and ends the run.
    let trip = Agent::builder(
        ScriptedModel::new()
            .reply(call("remote.lookup"))
            .reply(answer("x")),
    )
    .tool_source(Arc::new(Remote))
    .tool_result_guardrail(Pii::refuse().guardrail())
    .build()
    .unwrap();
    let outcome = trip.run("Who owns it?").await.outcome;
    assert_eq!(
        outcome,
        Outcome::GuardrailTripped(GuardrailTripped {
            guardrail: "pii".into(),
            stage: GuardrailStage::ToolResult,
            reason: "the text holds personal data: email, iban".into(),
        })
    );
}

#[tokio::test]
async fn a_guardrail_of_your_own_sees_each_stage() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let watch = agentry::agent::Guardrail::new("watch", move |text: String, stage| {
        log.lock().unwrap().push((stage, text));
        std::future::ready(agentry::agent::Verdict::Pass)
    });
    let agent = Agent::builder(ScriptedModel::new().reply(answer("fine")))
        .input_guardrail(watch.clone())
        .output_guardrail(watch)
        .build()
        .unwrap();
    agent.run("hello").await;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (GuardrailStage::Input, "hello".to_owned()),
            (GuardrailStage::Output, "fine".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_durable_run_journals_the_guarded_input_and_a_tripped_one_is_never_written() {
    let (model, agent) = guarding_input();
    let journal = Arc::new(InMemoryJournal::new());
    let runs = agent.durable(journal.clone());
    let run = runs
        .start("My IBAN is DE89 3704 0044 0532 0130 00.")
        .await
        .unwrap();
    assert_eq!(run.outcome.outcome, Outcome::Final("noted".into()));
    let entries = journal.entries(&run.id).await.unwrap();
    let RunEntry::Started { messages, .. } = &entries[0] else {
        panic!("{entries:?}")
    };
    assert_eq!(
        user_texts(messages),
        ["My IBAN is [IBAN]."],
        "the journal keeps the redaction"
    );
    assert_eq!(
        user_texts(&model.requests()[0].messages),
        ["My IBAN is [IBAN]."]
    );

    let stopped = runs.start("Sell me a weapon").await.unwrap();
    assert!(matches!(
        stopped.outcome.outcome,
        Outcome::GuardrailTripped(_)
    ));
    assert!(
        matches!(
            journal.entries(&stopped.id).await,
            Err(agentry::journal::JournalError::NotFound(_))
        ),
        "nothing was written"
    );
}
