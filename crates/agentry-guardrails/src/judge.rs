//! A model as judge: any `ChatModel` (the local one too) reads the text
//! against a rule and gives a verdict constrained to a JSON schema (a
//! grammar, for llama.cpp), `{"allowed": bool, "reason": string}`.

use std::sync::Arc;

use agentry_agent::{Guardrail, GuardrailStage, Verdict};
use agentry_core::model::{ChatModel, ChatRequest, Message, ResponseFormat, Step};
use serde_json::{Value, json};

/// The verdict's schema: what the judge's answer is constrained to.
pub fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "allowed": {"type": "boolean"},
            "reason": {"type": "string", "maxLength": 200}
        },
        "required": ["allowed", "reason"],
        "additionalProperties": false
    })
}

/// A guardrail named `name` that asks `model` whether a text keeps to
/// `rule` (one or two sentences, such as "The text gives no medical
/// advice."). A text that breaks it trips the run with the judge's reason;
/// a judge that fails or answers out of its schema trips too (the
/// guardrail cannot say the text is fine).
///
/// ```
/// use std::sync::Arc;
/// use agentry_guardrails::judge;
/// use agentry_agent::{GuardrailStage, Verdict};
/// use agentry_core::model::{ScriptedModel, Step, Usage};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let model = ScriptedModel::new().reply(Step::Final {
///     text: r#"{"allowed": false, "reason": "it recommends a dose"}"#.into(),
///     tokens: Usage::new(1, 1),
/// });
/// let guard = judge("no-medical-advice", Arc::new(model), "The text gives no medical advice.");
/// assert_eq!(
///     guard.check("Take 400 mg of ibuprofen.".into(), GuardrailStage::Output).await,
///     Verdict::Trip("it recommends a dose".into())
/// );
/// # }
/// ```
pub fn judge(
    name: impl Into<String>,
    model: Arc<dyn ChatModel>,
    rule: impl Into<String>,
) -> Guardrail {
    let rule: String = rule.into();
    Guardrail::new(name, move |text: String, stage: GuardrailStage| {
        let (model, rule) = (model.clone(), rule.clone());
        async move {
            let request = ChatRequest {
                system: Some(format!(
                    "You check texts against a rule. Rule: {rule}\n\
                     Answer with JSON: allowed is true when the text keeps to the rule, \
                     false when it breaks it; reason says why in a few words."
                )),
                messages: vec![Message::user(format!("The {stage} to check:\n\n{text}"))],
                response_format: Some(ResponseFormat::new("verdict", verdict_schema())),
                max_tokens: Some(120),
                temperature: Some(0.0),
                ..ChatRequest::default()
            };
            let answer = match model.step(&request).await {
                Ok(Step::Final { text, .. }) => text,
                Ok(Step::Tool { .. }) => return Verdict::Trip("the judge called a tool".into()),
                Err(error) => return Verdict::Trip(format!("the judge failed: {error}")),
            };
            let verdict: Option<(bool, String)> = serde_json::from_str::<Value>(answer.trim())
                .ok()
                .and_then(|v| Some((v["allowed"].as_bool()?, v["reason"].as_str()?.to_owned())));
            match verdict {
                Some((true, _)) => Verdict::Pass,
                Some((false, reason)) => Verdict::Trip(reason),
                None => Verdict::Trip("the judge's verdict was not readable".into()),
            }
        }
    })
}
