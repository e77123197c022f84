//! A model's pass-or-fail verdict on a text, with a reason: its answer is
//! constrained to [`schema`] (a grammar, for the local model). An eval's
//! rubric and a workflow loop's judge ask it.

use agentry_core::model::{ChatModel, ChatRequest, Message, ResponseFormat, Step, Usage};
use serde_json::{Value, json};

/// The verdict's schema: `{"pass": bool, "reason": string}`.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pass": {"type": "boolean"},
            "reason": {"type": "string", "maxLength": 200}
        },
        "required": ["pass", "reason"],
        "additionalProperties": false
    })
}

/// What a judge said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The text passes.
    pub pass: bool,
    /// Why, in the judge's words (or why there is no readable verdict).
    pub reason: String,
    /// Tokens the judge spent.
    pub usage: Usage,
    /// The verdict was read from the judge's answer (`false`: the judge
    /// failed, called a tool or answered out of the schema, and `reason`
    /// says which).
    pub judged: bool,
}

/// Ask `model`, told `instructions`, about `text`. A judge that fails, calls
/// a tool or answers out of the schema gives a failing verdict saying so: a
/// judge that cannot say the text passes fails it.
pub async fn ask(model: &dyn ChatModel, instructions: &str, text: String) -> Verdict {
    let request = ChatRequest {
        system: Some(format!(
            "{instructions} Answer with JSON: pass is true when it meets every point, false \
             otherwise; reason says why in a few words."
        )),
        messages: vec![Message::user(text)],
        response_format: Some(ResponseFormat::new("verdict", schema())),
        max_tokens: Some(120),
        temperature: Some(0.0),
        ..ChatRequest::default()
    };
    let failed = |reason: String, usage| Verdict {
        pass: false,
        reason,
        usage,
        judged: false,
    };
    match model.step(&request).await {
        Ok(Step::Final { text, tokens }) => {
            let read = serde_json::from_str::<Value>(text.trim())
                .ok()
                .and_then(|v| Some((v["pass"].as_bool()?, v["reason"].as_str()?.to_owned())));
            match read {
                Some((pass, reason)) => Verdict {
                    pass,
                    reason,
                    usage: tokens,
                    judged: true,
                },
                None => {
                    let shown: String = text.chars().take(200).collect();
                    failed(
                        format!("the judge's verdict was not readable: {shown:?}"),
                        tokens,
                    )
                }
            }
        }
        Ok(Step::Tool { tokens, .. }) => failed("the judge called a tool".into(), tokens),
        Err(error) => failed(format!("the judge failed: {error}"), Usage::default()),
    }
}
