//! An answer that must be JSON of a schema: the model is told what is wrong
//! and asked again, a set number of times, then the run trips (Pydantic
//! AI's output validators).

use agentry_agent::{Guardrail, GuardrailStage, Verdict};
use serde_json::Value;

/// Most problems named to the model at once.
const SHOWN: usize = 5;

/// A guardrail that takes an answer only if it is JSON valid against
/// `schema` (a fenced ```json block is read as well); otherwise the model is
/// asked again with what is wrong, `retries` times, then it trips.
///
/// ```
/// use agentry_guardrails::json_schema;
/// use agentry_agent::{GuardrailStage, Verdict};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
/// let guard = json_schema(schema, 2).unwrap();
/// assert_eq!(guard.check(r#"{"city": "Lyon"}"#.into(), GuardrailStage::Output).await, Verdict::Rewrite(r#"{"city":"Lyon"}"#.into()));
/// let Verdict::Retry(feedback) = guard.check("Lyon".into(), GuardrailStage::Output).await else { panic!() };
/// assert!(feedback.starts_with("the answer must be JSON"), "{feedback}");
/// # }
/// ```
pub fn json_schema(schema: Value, retries: u32) -> Result<Guardrail, String> {
    let validator = jsonschema::validator_for(&schema).map_err(|error| error.to_string())?;
    let validator = std::sync::Arc::new(validator);
    Ok(
        Guardrail::new("json-schema", move |text: String, _: GuardrailStage| {
            let validator = validator.clone();
            async move {
                let body = fenced(&text).unwrap_or(text.trim());
                let Ok(value) = serde_json::from_str::<Value>(body) else {
                    return Verdict::Retry(
                        "the answer must be JSON only, valid against the schema you were given"
                            .into(),
                    );
                };
                let problems: Vec<String> = validator
                    .iter_errors(&value)
                    .take(SHOWN)
                    .map(|error| format!("{}: {error}", error.instance_path()))
                    .collect();
                if problems.is_empty() {
                    Verdict::Rewrite(value.to_string())
                } else {
                    Verdict::Retry(format!(
                        "the JSON does not fit the schema ({})",
                        problems.join("; ")
                    ))
                }
            }
        })
        .retries(retries),
    )
}

/// The inside of a ```json (or ```) fenced block.
fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let rest = &text[start + 3..];
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    let end = rest.find("```")?;
    Some(rest[..end].trim())
}
