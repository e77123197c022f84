//! A model as judge: any `ChatModel` (the local one too) reads the text
//! against a rule and gives a verdict constrained to a JSON schema (a
//! grammar, for llama.cpp), `{"pass": bool, "reason": string}`
//! ([`agentry_agent::verdict`]).

use std::sync::Arc;

use agentry_agent::{Guardrail, GuardrailStage, Verdict};
use agentry_core::model::ChatModel;

pub use agentry_agent::verdict::schema as verdict_schema;

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
///     text: r#"{"pass": false, "reason": "it recommends a dose"}"#.into(),
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
            let verdict = agentry_agent::verdict::ask(
                model.as_ref(),
                &format!("You check texts against a rule. Rule: {rule}\nA text passes when it keeps to the rule."),
                format!("The {stage} to check:\n\n{text}"),
            )
            .await;
            if verdict.pass {
                Verdict::Pass
            } else {
                Verdict::Trip(verdict.reason)
            }
        }
    })
}
