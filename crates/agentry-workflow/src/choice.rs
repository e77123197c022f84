//! The model-facing choices inside a workflow: a route picked for an input,
//! and a loop's check on an output.

use agentry_core::model::{ChatRequest, Message, ResponseFormat, Step as ModelStep, Usage};
use serde_json::{Value, json};

use crate::step::{Route, Router, Until};

pub(crate) const PASS: &str = "pass";
pub(crate) const FAIL: &str = "fail: ";

/// A loop's check on `output`: `pass`, or `fail: why`.
pub(crate) async fn check(until: &Until, output: &str) -> (String, Usage) {
    match until {
        Until::Program(check) => match check(output) {
            Ok(()) => (PASS.into(), Usage::default()),
            Err(why) => (format!("{FAIL}{why}"), Usage::default()),
        },
        Until::Judge { model, rubric } => {
            let verdict = agentry_agent::verdict::ask(
                model.as_ref(),
                "You check a text against a rubric.",
                format!("Rubric: {rubric}\n\nThe text:\n{output}"),
            )
            .await;
            let said = if verdict.pass {
                PASS.to_owned()
            } else {
                format!("{FAIL}{}", verdict.reason)
            };
            (said, verdict.usage)
        }
    }
}

/// The route for `input`, and what choosing it cost.
pub(crate) async fn choose(route: &Route, input: &str) -> Result<(String, Usage), String> {
    match &route.router {
        Router::Program(choose) => choose(input)
            .map(|name| (name, Usage::default()))
            .ok_or_else(|| "no route fits the input".into()),
        Router::Model(model) => {
            let names: Vec<&str> = route.routes.iter().map(|to| to.name.as_str()).collect();
            let menu: Vec<String> = route
                .routes
                .iter()
                .map(|to| format!("- {}: {}", to.name, to.description))
                .collect();
            let request = ChatRequest {
                system: Some(format!(
                    "Choose the route for the user's request. The routes:\n{}\nAnswer with JSON naming one route.",
                    menu.join("\n")
                )),
                messages: vec![Message::user(input)],
                response_format: Some(ResponseFormat::new(
                    "route",
                    json!({
                        "type": "object",
                        "properties": {"route": {"type": "string", "enum": names}},
                        "required": ["route"],
                        "additionalProperties": false
                    }),
                )),
                max_tokens: Some(40),
                temperature: Some(0.0),
                ..ChatRequest::default()
            };
            match model.step(&request).await {
                Ok(ModelStep::Final { text, tokens }) => serde_json::from_str::<Value>(text.trim())
                    .ok()
                    .and_then(|v| v["route"].as_str().map(str::to_owned))
                    .filter(|name| names.contains(&name.as_str()))
                    .map(|name| (name, tokens))
                    .ok_or_else(|| format!("the router named no route: {text:?}")),
                Ok(ModelStep::Tool { .. }) => Err("the router called a tool".into()),
                Err(error) => Err(format!("the router failed: {error}")),
            }
        }
    }
}
