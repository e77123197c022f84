//! Model as judge: a `ChatModel` (the local one too) reads the request, the
//! answer and a rubric, and gives a verdict constrained to a JSON schema (a
//! grammar, for llama.cpp): `{"pass": bool, "reason": string}`.

use agentry_core::model::{ChatModel, ChatRequest, Message, ResponseFormat, Step};
use serde_json::{Value, json};

use crate::check::clip;

/// The verdict's schema: what the judge's answer is constrained to.
pub fn verdict_schema() -> Value {
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

/// Ask `model` whether `answer` to `request` meets `rubric`: `Err(reason)`
/// when it does not, when the judge fails, or when its verdict is not
/// readable (a judge that cannot say the answer is good fails it).
pub async fn judge(
    model: &dyn ChatModel,
    rubric: &str,
    request: &str,
    answer: &str,
) -> Result<(), String> {
    let chat = ChatRequest {
        system: Some(
            "You grade an assistant's answer against a rubric. Answer with JSON: pass is true \
             when the answer meets every point of the rubric, false otherwise; reason says why \
             in a few words."
                .into(),
        ),
        messages: vec![Message::user(format!(
            "Rubric: {rubric}\n\nThe user asked:\n{request}\n\nThe assistant answered:\n{answer}"
        ))],
        response_format: Some(ResponseFormat::new("verdict", verdict_schema())),
        max_tokens: Some(120),
        temperature: Some(0.0),
        ..ChatRequest::default()
    };
    let text = match model.step(&chat).await {
        Ok(Step::Final { text, .. }) => text,
        Ok(Step::Tool { .. }) => return Err("the judge called a tool".into()),
        Err(error) => return Err(format!("the judge failed: {error}")),
    };
    let verdict: Option<(bool, String)> = serde_json::from_str::<Value>(text.trim())
        .ok()
        .and_then(|v| Some((v["pass"].as_bool()?, v["reason"].as_str()?.to_owned())));
    match verdict {
        Some((true, _)) => Ok(()),
        Some((false, reason)) => Err(format!("the judge: {reason}")),
        None => Err(format!(
            "the judge's verdict was not readable: {:?}",
            clip(&text)
        )),
    }
}
