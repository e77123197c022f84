//! The fixture's tools that need the client: log messages, elicitation,
//! sampling and roots, asked through [`Caller`] (a request on a 2025-11-25
//! session, an `input_required` round on the stateless 2026-07-28 revision).

// MCP logging is deprecated by SEP-2577 but still in the 2025-11-25 scenarios.
#![allow(deprecated)]

use std::future::Future;
use std::time::Duration;

use agentry_core::tool::{Tool, ToolContext, ToolError, ToolHandler};
use agentry_mcp::server::{Caller, elicitation, roots, sampling};
use rmcp::model::LoggingLevel;
use serde_json::{Value, json};

/// A tool whose handler gets the MCP caller; called without one it fails.
fn asking<F, Fut>(name: &str, description: &str, schema: Value, run: F) -> Tool
where
    F: Fn(Value, Caller) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, String>> + Send + 'static,
{
    let run = std::sync::Arc::new(run);
    Tool::new(
        name,
        schema,
        ToolHandler::from_async(move |input: Value, ctx: ToolContext| {
            let run = run.clone();
            async move {
                let caller =
                    Caller::of(&ctx).ok_or_else(|| ToolError::failed("needs an MCP client"))?;
                run(input, caller).await.map_err(ToolError::failed)
            }
        }),
    )
    .with_description(description)
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn text_arg(name: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string"}}, "required": [name]})
}

fn schema_of(properties: Value) -> Value {
    let required: Vec<String> = properties
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    json!({"type": "object", "properties": properties, "required": required})
}

fn elicit(message: &str, properties: Value) -> Result<rmcp::model::InputRequest, String> {
    elicitation(message, schema_of(properties)).map_err(|e| e.to_string())
}

fn sample(text: &str, max_tokens: u32) -> Result<rmcp::model::InputRequest, String> {
    sampling(text, max_tokens).map_err(|e| e.to_string())
}

/// The text of a sampling answer.
fn sampled_text(answer: &Value) -> String {
    answer["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn elicited(answer: &Value) -> String {
    format!(
        "action={}, content={}",
        answer["action"].as_str().unwrap_or("?"),
        answer.get("content").cloned().unwrap_or(json!({}))
    )
}

async fn three_logs(caller: Caller) -> Result<Value, String> {
    for (i, message) in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        caller.log(LoggingLevel::Info, message).await;
    }
    Ok(json!("Logging test completed."))
}

/// The tools that ask the client for something.
pub fn tools() -> Vec<Tool> {
    vec![
        asking(
            "test_tool_with_logging",
            "Sends three log messages.",
            no_args(),
            |_, c| three_logs(c),
        ),
        asking(
            "test_logging_tool",
            "Sends three log messages.",
            no_args(),
            |_, c| three_logs(c),
        ),
        asking(
            "test_sampling",
            "Asks the client's model.",
            text_arg("prompt"),
            |input, caller| async move {
                let prompt = input["prompt"].as_str().unwrap_or_default();
                let answer = caller.ask("answer", sample(prompt, 100)?).await?;
                Ok(json!(format!("LLM response: {}", sampled_text(&answer))))
            },
        ),
        asking(
            "test_missing_capability",
            "Needs sampling, whatever the client declared.",
            no_args(),
            |_, caller| async move {
                let answer = caller.ask("answer", sample("Say hello.", 20)?).await?;
                Ok(json!(sampled_text(&answer)))
            },
        ),
        asking(
            "test_elicitation",
            "Asks the user.",
            text_arg("message"),
            |input, caller| async move {
                let message = input["message"].as_str().unwrap_or_default();
                let properties = json!({
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}
                });
                let answer = caller.ask("user", elicit(message, properties)?).await?;
                Ok(json!(format!("User response: <{}>", elicited(&answer))))
            },
        ),
        asking(
            "test_streaming_elicitation",
            "Asks the user for a name.",
            no_args(),
            |_, caller| async move {
                let answer = caller
                    .ask(
                        "user_name",
                        elicit("What is your name?", json!({"name": {"type": "string"}}))?,
                    )
                    .await?;
                Ok(json!(format!(
                    "Hello, {}!",
                    answer["content"]["name"].as_str().unwrap_or("stranger")
                )))
            },
        ),
        asking(
            "test_elicitation_sep1034_defaults",
            "Asks with a default for every type.",
            no_args(),
            |_, caller| async move {
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}
                }});
                let request = elicitation("Please review your details.", schema)
                    .map_err(|e| e.to_string())?;
                let answer = caller.ask("details", request).await?;
                Ok(json!(format!(
                    "Elicitation completed: {}",
                    elicited(&answer)
                )))
            },
        ),
        asking(
            "test_elicitation_sep1330_enums",
            "Asks with every kind of enum.",
            no_args(),
            |_, caller| async move {
                let schema = json!({"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}
                }});
                let request =
                    elicitation("Pick your options.", schema).map_err(|e| e.to_string())?;
                let answer = caller.ask("choices", request).await?;
                Ok(json!(format!(
                    "Elicitation completed: {}",
                    elicited(&answer)
                )))
            },
        ),
        asking(
            "test_input_required_result_elicitation",
            "Asks the user's name.",
            no_args(),
            |_, caller| async move {
                let answer = caller
                    .ask(
                        "user_name",
                        elicit("What is your name?", json!({"name": {"type": "string"}}))?,
                    )
                    .await?;
                Ok(json!(format!(
                    "Hello, {}!",
                    answer["content"]["name"].as_str().unwrap_or("stranger")
                )))
            },
        ),
        asking(
            "test_input_required_result_sampling",
            "Asks the client's model.",
            no_args(),
            |_, caller| async move {
                let answer = caller
                    .ask(
                        "capital_question",
                        sample("What is the capital of France?", 100)?,
                    )
                    .await?;
                Ok(json!(format!("LLM response: {}", sampled_text(&answer))))
            },
        ),
        asking(
            "test_input_required_result_list_roots",
            "Asks for the client's roots.",
            no_args(),
            |_, caller| async move {
                let answer = caller.ask("client_roots", roots()).await?;
                let uris: Vec<&str> = answer["roots"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|root| root["uri"].as_str())
                    .collect();
                Ok(json!(format!("Roots: {}", uris.join(", "))))
            },
        ),
        asking(
            "test_input_required_result_request_state",
            "Carries state between rounds.",
            no_args(),
            |_, caller| async move {
                if caller.state().is_none() {
                    caller.set_state(json!({"asked": "confirm"}));
                }
                let answer = caller
                    .ask(
                        "confirm",
                        elicit("Please confirm", json!({"ok": {"type": "boolean"}}))?,
                    )
                    .await?;
                match caller.state() {
                    Some(state) if state["asked"] == "confirm" => Ok(json!(format!(
                        "state-ok: confirmed={}",
                        answer["content"]["ok"]
                    ))),
                    _ => Err("the request state did not come back".into()),
                }
            },
        ),
        asking(
            "test_input_required_result_tampered_state",
            "Signs the state it carries.",
            no_args(),
            |_, caller| async move {
                caller.set_state(json!({"step": 1}));
                caller
                    .ask(
                        "confirm",
                        elicit("Please confirm", json!({"ok": {"type": "boolean"}}))?,
                    )
                    .await?;
                Ok(json!("state verified"))
            },
        ),
        asking(
            "test_input_required_result_multiple_inputs",
            "Asks three things at once.",
            no_args(),
            |_, caller| async move {
                caller.set_state(json!({"round": 1}));
                let answers = caller
                    .ask_all([
                        (
                            "user_name".to_owned(),
                            elicit("What is your name?", json!({"name": {"type": "string"}}))?,
                        ),
                        ("greeting".to_owned(), sample("Generate a greeting", 50)?),
                        ("client_roots".to_owned(), roots()),
                    ])
                    .await?;
                Ok(json!(format!(
                    "{} {}; {} roots",
                    sampled_text(&answers[1]),
                    answers[0]["content"]["name"].as_str().unwrap_or("?"),
                    answers[2]["roots"].as_array().map_or(0, Vec::len)
                )))
            },
        ),
        asking(
            "test_input_required_result_multi_round",
            "Asks in two rounds.",
            no_args(),
            |_, caller| async move {
                let round = caller
                    .state()
                    .and_then(|state| state["round"].as_u64())
                    .unwrap_or(0);
                let name = if round < 2 {
                    caller.set_state(json!({"round": 1}));
                    let answer = caller
                        .ask(
                            "step1",
                            elicit(
                                "Step 1: What is your name?",
                                json!({"name": {"type": "string"}}),
                            )?,
                        )
                        .await?;
                    answer["content"]["name"].as_str().unwrap_or("?").to_owned()
                } else {
                    caller
                        .state()
                        .and_then(|state| state["name"].as_str())
                        .unwrap_or("?")
                        .to_owned()
                };
                caller.set_state(json!({"round": 2, "name": name}));
                let answer = caller
                    .ask(
                        "step2",
                        elicit(
                            "Step 2: What is your favorite color?",
                            json!({"color": {"type": "string"}}),
                        )?,
                    )
                    .await?;
                Ok(json!(format!(
                    "{name} likes {}",
                    answer["content"]["color"].as_str().unwrap_or("?")
                )))
            },
        ),
        asking(
            "test_input_required_result_capabilities",
            "Asks only what the client can answer.",
            no_args(),
            |_, caller| async move {
                let wanted = [
                    (
                        "user_name".to_owned(),
                        elicit("What is your name?", json!({"name": {"type": "string"}}))?,
                    ),
                    ("greeting".to_owned(), sample("Generate a greeting", 50)?),
                ];
                let answerable: Vec<_> = wanted
                    .into_iter()
                    .filter(|(_, request)| caller.can_answer(request))
                    .collect();
                let answers = caller.ask_all(answerable).await?;
                Ok(json!(format!("{} answers", answers.len())))
            },
        ),
    ]
}
